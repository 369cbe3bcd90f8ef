//! Events for the models' own tests, built directly as the parsers make
//! them (the Python model tests build theirs the same way).

use crate::events::{Close, Event, Exit, FdCreate, Header, Ioctl, Kind, Value};
use crate::kfd;
use std::borrow::Cow;

/// A struct of int members (None for none).
pub fn int_struct(fs: &[(&'static str, i64)]) -> Option<Value> {
    (!fs.is_empty()).then(|| {
        Value::Struct(
            fs.iter()
                .map(|(k, v)| (Cow::Borrowed(*k), Value::Int(*v)))
                .collect(),
        )
    })
}

/// The ioctl `name` on `fd` with this argument and answer.
pub fn ioctl_kind(fd: i32, name: &'static str, arg: Option<Value>, out: Option<Value>) -> Kind {
    let r = kfd::request_by_name(name).expect("a known request");
    Kind::Ioctl(Ioctl {
        fd,
        path: None,
        request: None,
        dir: Some(r.dir),
        type_: Some(r.type_),
        nr: Some(r.nr),
        size: Some(r.size.into()),
        ioctl: Some(name),
        arg,
        out,
    })
}

/// The ioctl call `name` on `fd` with these argument and answer members.
pub fn ioctl(
    h: Header,
    fd: i32,
    name: &'static str,
    arg: &[(&'static str, i64)],
    out: &[(&'static str, i64)],
) -> Event {
    let k = ioctl_kind(fd, name, int_struct(arg), int_struct(out));
    let mut ev = Event::new(h, k);
    ev.name = Cow::Borrowed("ioctl");
    ev
}

/// Events of process 300 on one clock (as tests/test_model_handles.py's
/// Trace builds them).
pub struct T(pub u64);

impl T {
    pub fn h(&mut self, ret: Option<i64>) -> Header {
        self.0 += 1;
        Header {
            line: self.0,
            seq: self.0,
            pid: Some(300),
            tid: Some(300),
            time: Some(2000.0 + self.0 as f64 * 1e-4),
            ret,
            ..Default::default()
        }
    }

    /// /dev/kfd as fd 3, a render node as fd 4, and KFD buffer 0x100
    /// allocated and exported as dma-buf fd 5.
    pub fn exported(&mut self) -> Vec<Event> {
        vec![
            self.open(3, "/dev/kfd"),
            self.open(4, "/dev/dri/renderD128"),
            self.alloc(3, 0x100),
            self.export(3, 0x100, 5),
        ]
    }

    pub fn open(&mut self, fd: i32, path: &str) -> Event {
        let k = FdCreate {
            origin: Cow::Borrowed("open"),
            fds: vec![fd],
            paths: vec![Some(path.into())],
            cloexec: true,
            ..Default::default()
        };
        let mut ev = Event::new(self.h(Some(fd.into())), Kind::FdCreate(k));
        ev.name = Cow::Borrowed("openat");
        ev
    }

    pub fn ioctl(
        &mut self,
        fd: i32,
        name: &'static str,
        arg: &[(&'static str, i64)],
        out: &[(&'static str, i64)],
    ) -> Event {
        ioctl(self.h(Some(0)), fd, name, arg, out)
    }

    /// KFD buffer `handle` allocated (2 MiB on GPU 0x1a2b).
    pub fn alloc(&mut self, kfd_fd: i32, handle: i64) -> Event {
        self.ioctl(
            kfd_fd,
            "AMDKFD_IOC_ALLOC_MEMORY_OF_GPU",
            &[
                ("va_addr", 0),
                ("size", 0x20_0000),
                ("gpu_id", 0x1a2b),
                ("flags", 1),
            ],
            &[("handle", handle), ("mmap_offset", 0)],
        )
    }

    /// KFD buffer `handle` exported as dma-buf fd `fd`.
    pub fn export(&mut self, kfd_fd: i32, handle: i64, fd: i64) -> Event {
        self.ioctl(
            kfd_fd,
            "AMDKFD_IOC_EXPORT_DMABUF",
            &[("handle", handle), ("flags", 0o2000000)],
            &[("dmabuf_fd", fd)],
        )
    }

    /// dma-buf fd `fd` imported on render node `drm_fd` as GEM handle `gem`.
    pub fn fd_to_handle(&mut self, drm_fd: i32, fd: i64, gem: i64) -> Event {
        self.ioctl(
            drm_fd,
            "DRM_IOCTL_PRIME_FD_TO_HANDLE",
            &[("fd", fd)],
            &[("handle", gem)],
        )
    }

    /// GEM handle `gem` of render node `drm_fd` exported as dma-buf fd `fd`.
    pub fn prime_to_fd(&mut self, drm_fd: i32, gem: i64, fd: i64) -> Event {
        self.ioctl(
            drm_fd,
            "DRM_IOCTL_PRIME_HANDLE_TO_FD",
            &[("handle", gem), ("flags", 0o2000002)],
            &[("fd", fd)],
        )
    }

    pub fn close(&mut self, fd: i32) -> Event {
        self.close_path(fd, None)
    }

    /// A close as strace -y prints it, the fd's path decorating it.
    pub fn close_path(&mut self, fd: i32, path: Option<&str>) -> Event {
        let path = path.map(Into::into);
        let mut ev = Event::new(self.h(Some(0)), Kind::Close(Close { fd, path }));
        ev.name = Cow::Borrowed("close");
        ev
    }

    pub fn exit(&mut self) -> Event {
        let k = Exit {
            whole: true,
            status: Some(0),
            signal: None,
        };
        Event::new(self.h(None), Kind::Exit(k))
    }
}
