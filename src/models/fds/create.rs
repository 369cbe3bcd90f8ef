//! Calls that create an fd (open, dup, socket ...), and the EBADF answers
//! of dups, including a shell's save probe.

use super::*;

impl FdModel {
    pub(super) fn on_create(&mut self, p: &mut Proc, ev: &Ev, l: &mut dyn Listener) {
        let Kind::FdCreate(k) = &ev.kind else { return };
        let mut t = self.take_table(p);
        let mut src: Option<Slot> = None;
        if let Some(sf) = k.src_fd
            && k.origin != "pidfd_getfd"
        {
            if ev.h.err.as_deref() == Some("EBADF") {
                self.dup_ebadf(p, &mut t, ev, l);
                self.put_table(p, t);
                return;
            }
            if ev.h.ok() && sf >= 0 {
                self.o.use_fd(p, &mut t, l, sf.into(), ev, None, None);
                src = t.slots.get(&Fd::from(sf)).map(|s| (**s).clone());
            }
        }
        if ev.h.ok() {
            for (i, &fd) in k.fds.iter().enumerate() {
                if fd < 0 {
                    continue;
                }
                let fd = Fd::from(fd);
                let path = k.paths.get(i).cloned().flatten();
                if k.origin == "dup" {
                    if k.src_fd.map(Fd::from) == Some(fd) {
                        continue; // dup2(fd, fd): nothing changes
                    }
                    if k.replace && t.slots.contains_key(&fd) {
                        self.o.release(p, &mut t, l, fd, Some(ev), Release::Dup2);
                        let name = &ev.name;
                        self.o.hist(Some(&*t), ev, p.pid, fd, || {
                            format!("{name} closed fd {fd} to reuse its number")
                        });
                    }
                    if let Some(src) = &src {
                        let kind = kind_of(path.as_ref());
                        let (name, sfd) = (&ev.name, k.src_fd);
                        self.o.install(
                            p,
                            &mut t,
                            l,
                            ev,
                            fd,
                            kind,
                            Cow::Borrowed("dup"),
                            path,
                            k.cloexec,
                            Some(src),
                            false,
                            || format!("fd {fd} = {name} of fd {}", opt(sfd)),
                        );
                        continue;
                    }
                }
                let kind = kind_of(path.as_ref());
                let name = &ev.name;
                self.o.install(
                    p,
                    &mut t,
                    l,
                    ev,
                    fd,
                    kind,
                    k.origin.clone(),
                    path,
                    k.cloexec,
                    None,
                    false,
                    || format!("fd {fd} created by {name}"),
                );
            }
        }
        self.put_table(p, t);
    }

    /// Which fd a failing dup is about.
    /// The thread that saved fd N with F_DUPFD makes its next call: a
    /// dup2/dup3 onto N takes the fcntl's findings back.
    pub(super) fn settle_save(&mut self, sp: SaveProbe, ev: &Ev) {
        if sp.key != (ev.h.pid, ev.h.tid) {
            self.save = Some(sp);
            return;
        }
        let onto = match &ev.kind {
            Kind::FdCreate(k) if k.replace => k.new_fd.map(Fd::from),
            _ => None,
        };
        if onto != Some(sp.fd) {
            self.o.settle(sp.held);
            return;
        }
        for i in sp.held {
            self.o.findings[i] = None;
        }
        self.o.trim();
        if self.o.watched(ev.h.pid, sp.fd) {
            self.o.history.push((
                ev.clone(),
                format!(
                    "the fcntl before it saved fd {} before a redirection: a probe",
                    sp.fd
                ),
                None,
            ));
        }
    }

    pub(super) fn dup_ebadf(&mut self, p: &mut Proc, t: &mut Table, ev: &Ev, l: &mut dyn Listener) {
        let Kind::FdCreate(k) = &ev.kind else { return };
        let old = Fd::from(k.src_fd.unwrap_or(0));
        let new = k.new_fd.map(Fd::from);
        if new.is_none() && old >= 0 && matches!(&*ev.name, "fcntl" | "fcntl64") {
            let start = self.o.findings.len();
            // kept apart from repeats until the probe is settled
            self.o.hold = true;
            self.dup_ebadf_judged(p, t, ev, old, new, l);
            self.o.hold = false;
            self.save = Some(SaveProbe {
                key: (ev.h.pid, ev.h.tid),
                fd: old,
                held: start..self.o.findings.len(),
            });
            return;
        }
        self.dup_ebadf_judged(p, t, ev, old, new, l);
    }

    pub(super) fn dup_ebadf_judged(
        &mut self,
        p: &mut Proc,
        t: &mut Table,
        ev: &Ev,
        old: Fd,
        new: Option<Fd>,
        l: &mut dyn Listener,
    ) {
        if old < 0 {
            self.bad_fd(p, t, ev, old);
            return;
        }
        if let Some(n) = new
            && n < 0
        {
            self.bad_fd(p, t, ev, n);
            return;
        }
        if t.slots.contains_key(&old) {
            let name = &ev.name;
            self.o.hist(Some(t), ev, p.pid, old, || {
                format!("{name} failed with EBADF: about the new fd")
            });
            return;
        }
        if t.closed.contains_key(&old) {
            self.bad_use(p, t, ev, old, false, l);
        } else if new.is_none() {
            self.bad_fd(p, t, ev, old);
        }
    }
}
