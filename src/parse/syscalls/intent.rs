//! Intent calls (`hsa_*` lines of the preload log): their arguments by the
//! names the API gives them, out-params apart.

use super::*;

/// The intent calls [`intent_args`] names the arguments of: their names,
/// as the events carry them (no copy of the line's).
const INTENT_NAMES: &[&str] = &[
    "hsa_amd_memory_lock",
    "hsa_amd_memory_lock_to_pool",
    "hsa_amd_memory_unlock",
    "hsa_amd_svm_attributes_set",
    "hsa_amd_portable_export_dmabuf",
    "hsa_amd_portable_close_dmabuf",
    "hsa_amd_vmem_handle_create",
    "hsa_amd_vmem_handle_release",
    "hsa_amd_vmem_map",
    "hsa_amd_vmem_unmap",
    "hsa_amd_vmem_set_access",
    "hsa_amd_vmem_export_shareable_handle",
    "hsa_amd_vmem_import_shareable_handle",
    "hsa_amd_vmem_retain_alloc_handle",
];

/// An intent call's name as an event's [`Name`]: static for the calls the
/// log format names (every one of a capture library's), else a copy.
pub(super) fn intent_name(name: &str) -> Name {
    match INTENT_NAMES.iter().find(|&&n| n == name) {
        Some(&n) => Cow::Borrowed(n),
        None => Cow::Owned(name.to_owned()),
    }
}

/// Argument names of intent calls (docs/preload-log.md); '*' marks out-params.
/// (Lists, not one text split at each call: the split cost ~190
/// instructions an intent line.)
fn intent_args(name: &str) -> &'static [&'static str] {
    match name {
        "hsa_amd_memory_lock" => &["host_ptr", "size", "agents", "num_agent", "agent_ptr*"],
        "hsa_amd_memory_lock_to_pool" => &[
            "host_ptr",
            "size",
            "agents",
            "num_agent",
            "pool",
            "flags",
            "agent_ptr*",
        ],
        "hsa_amd_memory_unlock" => &["host_ptr"],
        "hsa_amd_svm_attributes_set" => &["ptr", "size", "attribute_list", "attribute_count"],
        "hsa_amd_portable_export_dmabuf" => &["ptr", "size", "dmabuf*", "offset*"],
        "hsa_amd_portable_close_dmabuf" => &["dmabuf"],
        "hsa_amd_vmem_handle_create" => &["pool", "size", "type", "flags", "memory_handle*"],
        "hsa_amd_vmem_handle_release" => &["memory_handle"],
        "hsa_amd_vmem_map" => &["va", "size", "in_offset", "memory_handle", "flags"],
        "hsa_amd_vmem_unmap" => &["va", "size"],
        "hsa_amd_vmem_set_access" => &["va", "size", "desc", "desc_cnt"],
        "hsa_amd_vmem_export_shareable_handle" => &["dmabuf_fd*", "handle", "flags"],
        "hsa_amd_vmem_import_shareable_handle" => &["dmabuf_fd", "handle*"],
        "hsa_amd_vmem_retain_alloc_handle" => &["memory_handle*", "addr"],
        _ => &[],
    }
}

/// An enumeration argument printed by its name (`MEMORY_TYPE_NONE`): its
/// value where the header's is known, else kept as printed.
fn intent_enum(key: &str, val: Value) -> Value {
    match (key, &val) {
        ("type", Value::Raw(t)) => match t.as_bytes() {
            b"MEMORY_TYPE_NONE" => Value::Int(0),
            b"MEMORY_TYPE_PINNED" => Value::Int(1),
            _ => val,
        },
        _ => val,
    }
}

fn intent_value_ok(key: &str, val: &Value, out: bool) -> bool {
    if matches!(key, "type" | "flags") && matches!(val, Value::Raw(_)) {
        // an enumeration or flag set by name
        return true;
    }
    if matches!(key, "agents" | "attribute_list" | "desc") {
        return matches!(val, Value::List(_)) || is_int(val);
    }
    if out && let Value::List(x) = val {
        return x.iter().all(is_int);
    }
    is_int(val)
}

/// An HSA handle type passed by value (`hsa_agent_t`,
/// `hsa_amd_memory_pool_t`, `hsa_amd_vmem_alloc_handle_t`: one-field
/// structs) reads the same in strace's struct notation (`{handle=0x5612a0}`)
/// as written as its value (`0x5612a0`), in lists too (SPEC 3.2).
fn unwrap_handle(val: Value) -> Value {
    match val {
        Value::Struct(mut f) if f.len() == 1 && f[0].0 == "handle" && is_int(&f[0].1) => {
            f.pop().unwrap().1
        }
        Value::List(x) => Value::List(x.into_iter().map(unwrap_handle).collect()),
        // hsa_amd_memory_access_desc_t's agent_handle is an hsa_agent_t
        Value::Struct(f) => {
            Value::Struct(f.into_iter().map(|(k, v)| (k, unwrap_handle(v))).collect())
        }
        v => v,
    }
}

/// Dict-style assignment: a repeated key keeps its place, the new value.
fn set_field(fields: &mut Vec<(Name, Value)>, key: Name, val: Value) {
    match fields.iter_mut().find(|(k, _)| *k == key) {
        Some(slot) => slot.1 = val,
        None => fields.push((key, val)),
    }
}

pub(super) fn intent(call: &mut Call<'_>) -> Kind {
    // the spec's names in argument order, read as the arguments are
    let mut spec = intent_args(&call.name).iter().copied();
    let mut args = Vec::with_capacity(call.args.len());
    let mut outs = Vec::new();
    for i in 0..call.args.len() {
        let named = spec.next();
        let key: Name = if let Some(k) = named {
            Cow::Borrowed(k)
        } else {
            match call.names.iter().rev().find(|(k, _)| *k == i) {
                Some((_, n)) if !n.is_empty() => {
                    Cow::Owned(String::from_utf8_lossy(n).into_owned())
                }
                _ => Cow::Owned(format!("arg{i}")),
            }
        };
        let out = key.ends_with('*');
        let key: Name = match key {
            Cow::Borrowed(k) => Cow::Borrowed(k.trim_end_matches('*')),
            Cow::Owned(k) => Cow::Owned(k.trim_end_matches('*').to_owned()),
        };
        let mut val = intent_enum(&key, unwrap_handle(parse_value(&call.args[i])));
        if named.is_some() && !intent_value_ok(&key, &val, out) {
            call.malformed = true;
            continue;
        }
        if out && let Value::List(mut x) = val {
            // a one-element list is its element; [] stays the empty list
            val = if x.len() == 1 {
                x.pop().unwrap()
            } else {
                Value::List(x)
            };
        }
        let fields = if out { &mut outs } else { &mut args };
        if named.is_some() {
            // the spec's names are distinct, and come before any other
            // (intent_args_are_distinct): no earlier field has this one
            fields.push((key, val));
        } else {
            set_field(fields, key, val);
        }
    }
    Kind::Intent(Box::new(Intent { args, outs }))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The spec of every intent call names each argument once (so a named
    /// argument is pushed, not looked up), and the static names are the
    /// calls that have a spec.
    #[test]
    fn intent_args_are_distinct() {
        for &n in INTENT_NAMES {
            let keys: Vec<&str> = intent_args(n)
                .iter()
                .map(|k| k.trim_end_matches('*'))
                .collect();
            assert!(!keys.is_empty(), "{n}");
            let mut sorted = keys.clone();
            sorted.sort_unstable();
            sorted.dedup();
            assert_eq!(sorted.len(), keys.len(), "{n}: {keys:?}");
            assert!(matches!(intent_name(n), Cow::Borrowed(_)));
        }
        assert!(matches!(intent_name("hsa_other"), Cow::Owned(_)));
        assert!(intent_args("hsa_other").is_empty());
    }
}
