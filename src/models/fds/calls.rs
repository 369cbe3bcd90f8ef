//! Calls that use fds: plain syscalls, mmap, ioctls (including those that
//! install an fd or borrow one inside their struct) and preload intents.

use super::*;

impl FdModel {
    #[inline]
    pub(super) fn on_syscall(&mut self, p: &mut Proc, ev: &Ev, l: &mut dyn Listener) {
        let Kind::Syscall(k) = &ev.kind else { return };
        if &*ev.name == "unshare" && ev.h.ok() && unshares_files(ev.h.src.text()) {
            self.unshare_files(p, ev);
            return;
        }
        let mut t = self.take_table(p);
        if ev.h.err.as_deref() == Some("EBADF") {
            let pos: Vec<Fd> = k
                .fds
                .iter()
                .map(|&f| Fd::from(f))
                .filter(|&f| f >= 0)
                .collect();
            if is_probe(&ev.name) {
                // the answer to a question, not a failed use
                for &fd in &pos {
                    if t.slots.contains_key(&fd) {
                        self.o.release(p, &mut t, l, fd, None, Release::Unseen);
                    }
                    let name = &ev.name;
                    self.o.hist(Some(&*t), ev, p.pid, fd, || {
                        format!("{name} probe: not open (EBADF)")
                    });
                }
                self.put_table(p, t);
                return;
            }
            if let Some(&neg) = k.fds.iter().find(|&&f| f < 0) {
                self.bad_fd(p, &t, ev, neg.into());
                self.put_table(p, t);
                return;
            }
            let closed: Vec<Fd> = pos
                .iter()
                .copied()
                .filter(|f| !t.slots.contains_key(f) && t.closed.contains_key(f))
                .collect();
            if closed.len() == 1 {
                self.bad_use(p, &mut t, ev, closed[0], false, l);
            } else if closed.is_empty() && pos.len() == 1 {
                match t.slots.get_mut(&pos[0]) {
                    None => self.bad_fd(p, &t, ev, pos[0]),
                    Some(s) => {
                        if s.racing.is_none() {
                            // the wrong open mode, an O_PATH fd, or another
                            // thread's close still in progress: that close decides
                            s.racing = Some(ev.clone());
                        }
                    }
                }
            }
            self.put_table(p, t);
            return;
        }
        if ev.h.ok() {
            for (i, &fd) in k.fds.iter().enumerate() {
                if fd < 0 {
                    continue;
                }
                let fd = Fd::from(fd);
                let path = k.paths.get(i).and_then(|x| x.as_ref());
                self.o.use_fd(p, &mut t, l, fd, ev, path, None);
                let name = &ev.name;
                self.o
                    .hist(Some(&*t), ev, p.pid, fd, || format!("used by {name}"));
            }
        }
        self.put_table(p, t);
    }

    #[inline]
    pub(super) fn on_mmap(&mut self, p: &mut Proc, ev: &Ev, l: &mut dyn Listener) {
        let Kind::Mmap(k) = &ev.kind else { return };
        if k.flags & MAP_ANONYMOUS != 0 {
            return;
        }
        let fd = Fd::from(k.fd);
        let ebadf = ev.h.err.as_deref() == Some("EBADF");
        let mut t = self.take_table(p);
        if fd < 0 {
            if ebadf {
                self.bad_fd(p, &t, ev, fd); // a file mapping of fd -1
            }
        } else if ebadf {
            self.bad_use(p, &mut t, ev, fd, true, l);
        } else if ev.h.ok() {
            self.o.use_fd(p, &mut t, l, fd, ev, k.path.as_ref(), None);
            self.o
                .hist(Some(&*t), ev, p.pid, fd, || "mmap of this fd".into());
        }
        self.put_table(p, t);
    }

    #[inline]
    pub(super) fn on_ioctl(&mut self, p: &mut Proc, ev: &Ev, l: &mut dyn Listener) {
        let Kind::Ioctl(k) = &ev.kind else { return };
        let key = match (k.type_, k.nr) {
            (Some(a), Some(b)) => Some((a, b)),
            _ => None,
        };
        let arg = k
            .arg
            .as_ref()
            .filter(|v| matches!(v, crate::events::Value::Struct(_)));
        let inner = match (arg, key.and_then(inner_fd_field)) {
            (Some(a), Some(f)) => fd_value(a.get(f)),
            _ => None,
        };
        let mut t = self.take_table(p);
        if ev.h.err.as_deref() == Some("EBADF") {
            self.ioctl_ebadf(p, &mut t, ev, inner, l);
            self.put_table(p, t);
            return;
        }
        let fd = Fd::from(k.fd);
        if ev.h.ok()
            && let Some(ty) = k.type_
            && (ty == kfd::TYPE_KFD || ty == kfd::TYPE_DRM)
        {
            let name = match k.ioctl {
                Some(n) => Some(n),
                None => {
                    let path: Option<&[u8]> = match &k.path {
                        Some(pp) if !pp.0.is_empty() => Some(pp.as_bytes()),
                        _ => t.slots.get(&fd).and_then(|s| s.kind.device_dir()),
                    };
                    match k.nr {
                        Some(nr) => kfd::ioctl_name(ty, nr, path, None),
                        None => None,
                    }
                }
            };
            if name.is_some_and(|n| ALLOC_IOCTLS.contains(&n)) {
                p.ioctl_allocs += 1;
            }
        }
        if ev.h.ret.is_none() || ev.h.err.is_some() {
            if fd >= 0 && ev.h.ret.is_some() {
                // An ioctl that reached the driver proves its fd was open.
                self.o.use_fd(p, &mut t, l, fd, ev, k.path.as_ref(), None);
            }
            self.put_table(p, t);
            return;
        }
        let label = k.ioctl.unwrap_or("ioctl");
        if fd >= 0 {
            self.o.use_fd(p, &mut t, l, fd, ev, k.path.as_ref(), None);
            self.o
                .hist(Some(&*t), ev, p.pid, fd, || format!("{label} on this fd"));
        }
        if let Some(inner) = inner
            && inner >= 0
        {
            let role = (key == Some(kfd::IMPORT_DMABUF) || key == Some(kfd::PRIME_FD_TO_HANDLE))
                .then(|| "imported by".to_owned());
            self.o.use_fd(p, &mut t, l, inner, ev, None, role);
            self.o
                .hist(Some(&*t), ev, p.pid, inner, || format!("passed to {label}"));
        }
        let Some(key) = key else {
            self.put_table(p, t);
            return;
        };
        let Some((where_, mut kind, origin)) = creating_ioctl(key) else {
            self.put_table(p, t);
            return;
        };
        let newfd = match where_ {
            None => ev.h.ret,
            Some(w) => {
                let out = k
                    .out
                    .as_ref()
                    .filter(|v| matches!(v, crate::events::Value::Struct(_)));
                match out {
                    Some(out) => fd_value(out.get(w)),
                    None => {
                        // strace: the new fd is in a struct we cannot read.
                        p.blind = true;
                        if self.o.watch.is_some() {
                            let lf = t.lowest_free();
                            if self.o.watched(p.pid, lf) {
                                self.o.history.push((
                                    ev.clone(),
                                    format!(
                                        "{origin} probably created fd {lf} (lowest free number; \
                                         the struct is not in the trace)"
                                    ),
                                    None,
                                ));
                            }
                        }
                        self.put_table(p, t);
                        return;
                    }
                }
            }
        };
        let Some(newfd) = newfd.filter(|&f| f >= 0) else {
            self.put_table(p, t);
            return;
        };
        let num =
            |f: &str| -> Option<i128> { arg.and_then(|a| a.get(f)).and_then(|v| v.as_i128()) };
        // `arg.get("flags", 0)`, 0 when it is not an int
        let flags = num("flags").unwrap_or(0);
        let mut cloexec = true;
        if key == kfd::EXPORT_DMABUF || key == kfd::PRIME_HANDLE_TO_FD {
            cloexec = flags & O_CLOEXEC != 0;
        } else if key == kfd::DMA_HEAP_ALLOC {
            cloexec = match arg.and_then(|a| a.get("fd_flags")) {
                None => false,
                Some(v) => v.as_i128().is_some_and(|ff| ff & O_CLOEXEC != 0),
            };
        } else if key == kfd::UDMABUF_CREATE {
            cloexec = flags & 1 != 0;
        }
        if key == kfd::SYNCOBJ_HANDLE_TO_FD && flags & 1 == 0 {
            kind = FdKind::Other; // a syncobj fd, not a sync_file: still a GPU object
        }
        let gpu = kind != FdKind::Other || key == kfd::SYNCOBJ_HANDLE_TO_FD;
        self.o.install(
            p,
            &mut t,
            l,
            ev,
            newfd,
            kind,
            Cow::Borrowed(origin),
            None,
            cloexec,
            None,
            gpu,
            || format!("fd {newfd} created by {origin}"),
        );
        self.put_table(p, t);
    }

    pub(super) fn on_intent(&mut self, p: &mut Proc, ev: &Ev) {
        let Kind::Intent(k) = &ev.kind else { return };
        if ALLOC_INTENTS.contains(&&*ev.name) && ev.h.ok() && ev.h.ret == Some(0) {
            p.intent_allocs += 1;
        }
        let mut t = self.take_table(p);
        if let Some(fld) = handover_intent(&ev.name)
            && ev.h.ret == Some(0)
        {
            let v = field(&k.outs, fld).or_else(|| field(&k.args, fld));
            if let Some(fd) = fd_value(v).filter(|&f| f >= 0) {
                if let Some(s) = t.slots.get_mut(&fd) {
                    s.note("handed to the caller by".into(), ev);
                } else if t.closed.contains_key(&fd) {
                    self.stale_handover(&t, ev, p.pid, fd);
                }
                let name = &ev.name;
                self.o.hist(Some(&*t), ev, p.pid, fd, || {
                    format!("{name} handed fd {fd} to its caller")
                });
            }
        }
        if let Some(fld) = borrow_intent(&ev.name)
            && let Some(fd) = fd_value(field(&k.args, fld)).filter(|&f| f >= 0)
        {
            if let Some(s) = t.slots.get_mut(&fd) {
                s.note(format!("passed to {} by", ev.name), ev);
            }
            let name = &ev.name;
            self.o
                .hist(Some(&*t), ev, p.pid, fd, || format!("passed to {name}"));
        }
        self.put_table(p, t);
    }
}
