//! Events to and from a merge's spill file: a
//! plain binary form, read back only by the process that wrote it.

use super::merge::Spill;
use crate::events::*;
use std::borrow::Cow;
use std::io::{self, Read, Write};
use std::sync::Arc;

struct W<'a>(&'a mut dyn Write);

impl W<'_> {
    fn u8(&mut self, v: u8) -> io::Result<()> {
        self.0.write_all(&[v])
    }
    fn u64(&mut self, v: u64) -> io::Result<()> {
        self.0.write_all(&v.to_le_bytes())
    }
    fn bool(&mut self, v: bool) -> io::Result<()> {
        self.u8(v as u8)
    }
    fn bytes(&mut self, b: &[u8]) -> io::Result<()> {
        self.u64(b.len() as u64)?;
        self.0.write_all(b)
    }
    fn str(&mut self, s: &str) -> io::Result<()> {
        self.bytes(s.as_bytes())
    }
    fn opt<T>(
        &mut self,
        v: &Option<T>,
        f: impl FnOnce(&mut Self, &T) -> io::Result<()>,
    ) -> io::Result<()> {
        match v {
            None => self.u8(0),
            Some(x) => {
                self.u8(1)?;
                f(self, x)
            }
        }
    }
    fn f64(&mut self, v: f64) -> io::Result<()> {
        self.u64(v.to_bits())
    }
    fn i(&mut self, v: i64) -> io::Result<()> {
        self.u64(v as u64)
    }
    fn value(&mut self, v: &Value) -> io::Result<()> {
        match v {
            Value::Int(i) => {
                self.u8(0)?;
                self.i(*i)
            }
            Value::UInt(u) => {
                self.u8(1)?;
                self.u64(*u)
            }
            Value::Str(t) => {
                self.u8(2)?;
                self.bytes(t.as_bytes())
            }
            Value::Raw(t) => {
                self.u8(3)?;
                self.bytes(t.as_bytes())
            }
            Value::List(l) => {
                self.u8(4)?;
                self.u64(l.len() as u64)?;
                l.iter().try_for_each(|x| self.value(x))
            }
            Value::Struct(f) => {
                self.u8(5)?;
                self.fields(f)
            }
            Value::Pair(p) => {
                self.u8(6)?;
                self.value(&p.0)?;
                self.value(&p.1)
            }
        }
    }
    fn fields(&mut self, f: &[(Name, Value)]) -> io::Result<()> {
        self.u64(f.len() as u64)?;
        for (k, v) in f {
            self.str(k)?;
            self.value(v)?;
        }
        Ok(())
    }
    fn text(&mut self, t: &Option<Text>) -> io::Result<()> {
        self.opt(t, |w, t| w.bytes(t.as_bytes()))
    }
    fn fds(&mut self, fds: &[i32], paths: &[Option<Text>]) -> io::Result<()> {
        self.u64(fds.len() as u64)?;
        fds.iter().try_for_each(|&f| self.i(f as i64))?;
        self.u64(paths.len() as u64)?;
        paths.iter().try_for_each(|p| self.text(p))
    }
}

struct R<'a>(&'a mut dyn Read);

fn bad() -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, "a spill file that is not ours")
}

impl R<'_> {
    fn u8(&mut self) -> io::Result<u8> {
        let mut b = [0];
        self.0.read_exact(&mut b)?;
        Ok(b[0])
    }
    fn u64(&mut self) -> io::Result<u64> {
        let mut b = [0; 8];
        self.0.read_exact(&mut b)?;
        Ok(u64::from_le_bytes(b))
    }
    fn bool(&mut self) -> io::Result<bool> {
        Ok(self.u8()? != 0)
    }
    fn len(&mut self) -> io::Result<usize> {
        usize::try_from(self.u64()?).map_err(|_| bad())
    }
    fn bytes(&mut self) -> io::Result<Vec<u8>> {
        let n = self.len()?;
        let mut v = Vec::new();
        self.0.take(n as u64).read_to_end(&mut v)?;
        if v.len() != n {
            return Err(io::ErrorKind::UnexpectedEof.into());
        }
        Ok(v)
    }
    fn string(&mut self) -> io::Result<String> {
        String::from_utf8(self.bytes()?).map_err(|_| bad())
    }
    fn opt<T>(&mut self, f: impl FnOnce(&mut Self) -> io::Result<T>) -> io::Result<Option<T>> {
        Ok(if self.u8()? == 0 {
            None
        } else {
            Some(f(self)?)
        })
    }
    fn f64(&mut self) -> io::Result<f64> {
        Ok(f64::from_bits(self.u64()?))
    }
    fn i(&mut self) -> io::Result<i64> {
        Ok(self.u64()? as i64)
    }
    fn i32(&mut self) -> io::Result<i32> {
        i32::try_from(self.i()?).map_err(|_| bad())
    }
    fn u32(&mut self) -> io::Result<u32> {
        u32::try_from(self.u64()?).map_err(|_| bad())
    }
    fn value(&mut self) -> io::Result<Value> {
        Ok(match self.u8()? {
            0 => Value::Int(self.i()?),
            1 => Value::UInt(self.u64()?),
            2 => Value::Str(Text(self.bytes()?.into())),
            3 => Value::Raw(Text(self.bytes()?.into())),
            4 => {
                let n = self.len()?;
                let mut l = Vec::new();
                for _ in 0..n {
                    l.push(self.value()?);
                }
                Value::List(l)
            }
            5 => Value::Struct(self.fields()?),
            6 => Value::Pair(Box::new((self.value()?, self.value()?))),
            _ => return Err(bad()),
        })
    }
    fn name(&mut self) -> io::Result<Name> {
        Ok(Cow::Owned(self.string()?))
    }
    fn fields(&mut self) -> io::Result<Vec<(Name, Value)>> {
        let n = self.len()?;
        let mut f = Vec::new();
        for _ in 0..n {
            f.push((self.name()?, self.value()?));
        }
        Ok(f)
    }
    fn text(&mut self) -> io::Result<Option<Text>> {
        self.opt(|r| Ok(Text(r.bytes()?.into())))
    }
    fn fds(&mut self) -> io::Result<(Vec<i32>, Vec<Option<Text>>)> {
        let n = self.len()?;
        let mut fds = Vec::new();
        for _ in 0..n {
            fds.push(self.i32()?);
        }
        let n = self.len()?;
        let mut paths = Vec::new();
        for _ in 0..n {
            paths.push(self.text()?);
        }
        Ok((fds, paths))
    }
}

/// An ioctl name read back: the static one kfd.rs or the parser gave (it
/// was kept when parsed, so it is found again).
fn ioctl_name(s: String) -> Option<&'static str> {
    crate::kfd::static_name(&s)
}

impl Spill for Event {
    fn spill(&self, out: &mut dyn Write) -> io::Result<()> {
        let mut w = W(out);
        let h = &self.h;
        w.u64(h.file.0 as u64)?;
        w.u64(h.line)?;
        w.opt(&h.end_line, |w, &v| w.u64(v))?;
        w.u64(h.seq)?;
        w.opt(&h.pid, |w, &v| w.u64(v as u64))?;
        w.opt(&h.tid, |w, &v| w.u64(v as u64))?;
        w.opt(&h.time, |w, &v| w.f64(v))?;
        w.opt(&h.dur, |w, &v| w.f64(v))?;
        w.opt(&h.ret, |w, &v| w.i(v))?;
        w.opt(&h.err, |w, v| w.str(v))?;
        w.u64(h.stack.len() as u64)?;
        for f in h.stack.iter() {
            w.str(&f.module)?;
            w.opt(&f.symbol, |w, v| w.str(v))?;
            w.opt(&f.sym_offset, |w, &v| w.u64(v))?;
            w.opt(&f.addr, |w, &v| w.u64(v))?;
            w.opt(&f.function, |w, v| w.str(v))?;
            w.opt(&f.source, |w, v| w.str(v))?;
            w.opt(&f.source_line, |w, &v| w.u64(v as u64))?;
        }
        // the line(s) by reference, or the text kept
        for at in [h.src.at, h.src.resumed] {
            w.u64(at.off)?;
            w.u64(at.len.into())?;
        }
        w.opt(&h.src.text, |w, v| w.bytes(v.as_bytes()))?;
        w.bool(h.partial)?;
        w.bool(h.injected)?;
        w.str(&self.name)?;
        match &self.kind {
            Kind::FdCreate(k) => {
                w.u8(0)?;
                w.str(&k.origin)?;
                w.fds(&k.fds, &k.paths)?;
                w.bool(k.cloexec)?;
                w.opt(&k.src_fd, |w, &v| w.i(v as i64))?;
                w.bool(k.replace)?;
                w.opt(&k.new_fd, |w, &v| w.i(v as i64))
            }
            Kind::Close(k) => {
                w.u8(1)?;
                w.i(k.fd as i64)?;
                w.text(&k.path)
            }
            Kind::CloseRange(k) => {
                w.u8(2)?;
                w.u64(k.first as u64)?;
                w.u64(k.last as u64)?;
                w.u64(k.flags as u64)
            }
            Kind::SetCloexec(k) => {
                w.u8(3)?;
                w.i(k.fd as i64)?;
                w.bool(k.cloexec)
            }
            Kind::Syscall(k) => {
                w.u8(4)?;
                w.fds(&k.fds, &k.paths)
            }
            Kind::Ioctl(k) => {
                w.u8(5)?;
                w.i(k.fd as i64)?;
                w.text(&k.path)?;
                w.opt(&k.request, |w, &v| w.u64(v as u64))?;
                w.opt(&k.dir, |w, &v| w.u8(v))?;
                w.opt(&k.type_, |w, &v| w.u8(v))?;
                w.opt(&k.nr, |w, &v| w.u8(v))?;
                w.opt(&k.size, |w, &v| w.u64(v))?;
                w.opt(&k.ioctl, |w, v| w.str(v))?;
                w.opt(&k.arg, |w, v| w.value(v))?;
                w.opt(&k.out, |w, v| w.value(v))
            }
            Kind::Mmap(k) => {
                w.u8(6)?;
                w.opt(&k.addr, |w, &v| w.u64(v))?;
                w.u64(k.length)?;
                w.u64(k.prot)?;
                w.u64(k.flags)?;
                w.i(k.fd as i64)?;
                w.text(&k.path)?;
                w.u64(k.offset)
            }
            Kind::Munmap(k) => {
                w.u8(7)?;
                w.u64(k.addr)?;
                w.u64(k.length)
            }
            Kind::Mremap(k) => {
                w.u8(8)?;
                w.u64(k.old_addr)?;
                w.u64(k.old_len)?;
                w.u64(k.new_len)?;
                w.u64(k.flags)?;
                w.opt(&k.new_addr, |w, &v| w.u64(v))
            }
            Kind::Clone(k) => {
                w.u8(9)?;
                w.opt(&k.child, |w, &v| w.u64(v as u64))?;
                w.bool(k.thread)?;
                w.bool(k.share_files)?;
                w.u64(k.flags)
            }
            Kind::Exec(k) => {
                w.u8(10)?;
                w.text(&k.path)
            }
            Kind::Exit(k) => {
                w.u8(11)?;
                w.bool(k.whole)?;
                w.opt(&k.status, |w, &v| w.i(v))?;
                w.opt(&k.signal, |w, v| w.str(v))
            }
            Kind::Signal(k) => {
                w.u8(12)?;
                w.str(&k.signal)
            }
            Kind::ProcessInfo(k) => {
                w.u8(13)?;
                w.opt(&k.ppid, |w, &v| w.u64(v as u64))?;
                w.text(&k.exe)?;
                w.u64(k.page_size)
            }
            Kind::FdSnapshot(k) => {
                w.u8(14)?;
                w.bool(k.when == When::Exit)?;
                w.u64(k.fds.len() as u64)?;
                for (fd, p) in &k.fds {
                    w.i(*fd as i64)?;
                    w.bytes(p.as_bytes())?;
                }
                Ok(())
            }
            Kind::ModuleMap(k) => {
                w.u8(15)?;
                w.u64(k.start)?;
                w.u64(k.end_addr)?;
                w.u64(k.offset)?;
                w.str(&k.perms)?;
                w.bytes(k.module.as_bytes())?;
                w.opt(&k.build_id, |w, v| w.str(v))
            }
            Kind::Intent(k) => {
                w.u8(16)?;
                w.fields(&k.args)?;
                w.fields(&k.outs)
            }
        }
    }

    fn unspill(inp: &mut dyn Read) -> io::Result<Option<Self>> {
        let mut r = R(inp);
        let file = match r.u64() {
            Ok(v) => FileId(u32::try_from(v).map_err(|_| bad())?),
            Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => return Ok(None),
            Err(e) => return Err(e),
        };
        let line = r.u64()?;
        let end_line = r.opt(R::u64)?;
        let seq = r.u64()?;
        let pid = r.opt(R::u32)?;
        let tid = r.opt(R::u32)?;
        let time = r.opt(R::f64)?;
        let dur = r.opt(R::f64)?;
        let ret = r.opt(R::i)?;
        let err = r.opt(R::name)?;
        let n = r.len()?;
        let mut stack = Vec::new();
        for _ in 0..n {
            let module: Arc<str> = r.string()?.into();
            let mut f = Frame::new(module);
            f.symbol = r.opt(|r| Ok(r.string()?.into()))?;
            f.sym_offset = r.opt(R::u64)?;
            f.addr = r.opt(R::u64)?;
            f.function = r.opt(|r| Ok(r.string()?.into()))?;
            f.source = r.opt(|r| Ok(r.string()?.into()))?;
            f.source_line = r.opt(R::u32)?;
            stack.push(f);
        }
        let mut at = [Span::default(); 2];
        for a in &mut at {
            a.off = r.u64()?;
            a.len = u32::try_from(r.u64()?).map_err(|_| bad())?;
        }
        let src = Source {
            at: at[0],
            resumed: at[1],
            text: r.opt(|r| Ok(Text(r.bytes()?.into())))?,
        };
        let partial = r.bool()?;
        let injected = r.bool()?;
        let name = r.name()?;
        let kind = match r.u8()? {
            0 => {
                let origin = r.name()?;
                let (fds, paths) = r.fds()?;
                Kind::FdCreate(FdCreate {
                    origin,
                    fds,
                    paths,
                    cloexec: r.bool()?,
                    src_fd: r.opt(R::i32)?,
                    replace: r.bool()?,
                    new_fd: r.opt(R::i32)?,
                })
            }
            1 => Kind::Close(Close {
                fd: r.i32()?,
                path: r.text()?,
            }),
            2 => Kind::CloseRange(CloseRange {
                first: r.u32()?,
                last: r.u32()?,
                flags: r.u32()?,
            }),
            3 => Kind::SetCloexec(SetCloexec {
                fd: r.i32()?,
                cloexec: r.bool()?,
            }),
            4 => {
                let (fds, paths) = r.fds()?;
                Kind::Syscall(Syscall { fds, paths })
            }
            5 => Kind::Ioctl(Ioctl {
                fd: r.i32()?,
                path: r.text()?,
                request: r.opt(R::u32)?,
                dir: r.opt(R::u8)?,
                type_: r.opt(R::u8)?,
                nr: r.opt(R::u8)?,
                size: r.opt(R::u64)?,
                ioctl: r.opt(|r| Ok(ioctl_name(r.string()?)))?.flatten(),
                arg: r.opt(R::value)?,
                out: r.opt(R::value)?,
            }),
            6 => Kind::Mmap(Mmap {
                addr: r.opt(R::u64)?,
                length: r.u64()?,
                prot: r.u64()?,
                flags: r.u64()?,
                fd: r.i32()?,
                path: r.text()?,
                offset: r.u64()?,
            }),
            7 => Kind::Munmap(Munmap {
                addr: r.u64()?,
                length: r.u64()?,
            }),
            8 => Kind::Mremap(Mremap {
                old_addr: r.u64()?,
                old_len: r.u64()?,
                new_len: r.u64()?,
                flags: r.u64()?,
                new_addr: r.opt(R::u64)?,
            }),
            9 => Kind::Clone(Clone {
                child: r.opt(R::u32)?,
                thread: r.bool()?,
                share_files: r.bool()?,
                flags: r.u64()?,
            }),
            10 => Kind::Exec(Exec { path: r.text()? }),
            11 => Kind::Exit(Exit {
                whole: r.bool()?,
                status: r.opt(R::i)?,
                signal: r.opt(R::name)?,
            }),
            12 => Kind::Signal(Signal { signal: r.name()? }),
            13 => Kind::ProcessInfo(ProcessInfo {
                ppid: r.opt(R::u32)?,
                exe: r.text()?,
                page_size: r.u64()?,
            }),
            14 => {
                let when = if r.bool()? { When::Exit } else { When::Start };
                let n = r.len()?;
                let mut fds = Vec::new();
                for _ in 0..n {
                    fds.push((r.i32()?, Text(r.bytes()?.into())));
                }
                Kind::FdSnapshot(FdSnapshot { when, fds })
            }
            15 => Kind::ModuleMap(ModuleMap {
                start: r.u64()?,
                end_addr: r.u64()?,
                offset: r.u64()?,
                perms: r.string()?.into(),
                module: Text(r.bytes()?.into()),
                build_id: r.opt(|r| Ok(r.string()?.into()))?,
            }),
            16 => Kind::Intent(Box::new(Intent {
                args: r.fields()?,
                outs: r.fields()?,
            })),
            _ => return Err(bad()),
        };
        Ok(Some(Event {
            h: Header {
                file,
                line,
                end_line,
                seq,
                pid,
                tid,
                time,
                dur,
                ret,
                err,
                stack: stack.into(),
                src,
                partial,
                injected,
            },
            name,
            kind,
        }))
    }
}
