//! mmap / munmap / mremap: unmapped pages forget their SVM attributes and
//! the claims on them lose those pages (svm-unmap-registered).

use super::*;

impl SvmModel {
    pub(super) fn mremap(&mut self, ev: &Event) {
        let Kind::Mremap(m) = &ev.kind else { return };
        if !ev.h.ok() {
            return;
        }
        let Some((_, p)) = self.procs.get_mut(&ev.h.pid) else {
            return;
        };
        let evr = rc(&mut self.cur, ev);
        let ret = ev.h.ret_u64().unwrap_or(0);
        // shrunk in place, the tail past the page-aligned new length; moved,
        // the target then the source
        for (s, e) in mremap_unmaps(m.old_addr, m.old_len, m.new_len, ret, p.shift) {
            self.sh.unmap(p, &evr, s, e);
        }
    }
}

impl Shared {
    pub(super) fn unmap(&mut self, p: &mut Proc, ev: &Ev, s: u64, e: u64) {
        if s >= e {
            return;
        }
        let hit = p.cover.query(s, e);
        let had_range = p.map.pieces.any_in(s, e);
        let mut notes = Vec::new();
        for c in &hit {
            let (locked, kind, cut) = {
                let b = c.b();
                (
                    b.kind == ClaimKind::Explicit && b.refcount > 0,
                    b.kind,
                    cut_count(&b.pages, s, e),
                )
            };
            if locked || kind == ClaimKind::Registration {
                self.raws.push(Raw {
                    kind: RawKind::Unmap {
                        claim: c.clone(),
                        event: ev.clone(),
                        shift: p.shift,
                        locked,
                        s,
                        e,
                        pages: cut,
                    },
                    dead: false,
                });
            }
            notes.push(format!("#{}", c.id()));
            let pages = c.b().pages.clone();
            let mut left = Vec::new();
            for (cs, ce) in pages {
                if ce <= s || cs >= e {
                    left.push((cs, ce));
                    continue;
                }
                p.cover.remove(cs.max(s), ce.min(e), c);
                if cs < s {
                    left.push((cs, s));
                }
                if ce > e {
                    left.push((e, ce));
                }
            }
            if left.is_empty() {
                self.judge_stale(p, c, Pre::Now);
                {
                    let mut b = c.m();
                    b.live = false;
                    b.ended_by = Some(ev.clone());
                    b.release_began = ev.h.time;
                    b.release_after = ev.h.time;
                    b.pages = Vec::new();
                }
                self.unindex(p, c);
            } else {
                c.m().pages = left;
            }
        }
        p.map.unmap(s, e);
        p.dereg.delete(s, e);
        if (had_range || !hit.is_empty()) && self.watch.is_some() {
            let mut what = format!(
                "unmap {}-{}: SVM attributes forgotten",
                page_hex(s, p.shift),
                page_hex(e, p.shift)
            );
            if !notes.is_empty() {
                what += &format!("; removes pages of claims {}", notes.join(", "));
            }
            self.note(p, ev, s, e, what);
        }
    }
}

fn cut_count(pages: &[(u64, u64)], s: u64, e: u64) -> u64 {
    pages
        .iter()
        .map(|&(cs, ce)| ce.min(e).saturating_sub(cs.max(s)))
        .sum()
}
