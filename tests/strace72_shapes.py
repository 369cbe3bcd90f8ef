"""Lines in the shapes strace 7.2's own test suite prints that the reader
once counted unparsed (issue 33): decoded ioctl structs of other subsystems
on fd -1 with `(INJECTED)` or EBADF results, requests printed as two
alternatives, `-X verbose` comments inside values, char literals, fds
decorated inside structs, kvm vcpu fds, prctl values whose comment holds
`<<`, and the summary tables.  The shapes follow the printf formats of
strace's tests/*.c (ioctl_gpio.c, ioctl_kd.c, ioctl_v4l2.c,
ioctl_seccomp.c, ioctl_ubi.c, ioctl_ptp.c, ioctl_sg_io_v3.c, ioctl_tee.c,
ioctl_udmabuf.c, ioctl_kvm_run*.c, prctl-*.c, strace--syscall-limit*.c);
the values are made up.

``groups()`` yields (lines, expected): lines read in order by one parser,
and the (name, fd, ret, err) of each call they must give.  Deterministic; `python tests/strace72_shapes.py` prints the lines."""

from __future__ import annotations

import itertools
import sys

EBADF = "-1 EBADF (Bad file descriptor)"
INJ = "42 (INJECTED)"
ENOTTY = "-1 ENOTTY (Inappropriate ioctl for device)"

# (request, argument) of ioctls on fd -1
IOCTLS: list[tuple[str, str]] = [
    # GPIO v1 and v2 (ioctl_gpio.c)
    ("GPIO_GET_CHIPINFO_IOCTL", "NULL"),
    ("GPIO_GET_CHIPINFO_IOCTL", '{name="chip name", label="chip label", lines=31}'),
    (
        "GPIO_GET_LINEHANDLE_IOCTL",
        "{lines=4, lineoffsets=[18, 35, 52, 69], flags=GPIOHANDLE_REQUEST_ACTIVE_LOW|"
        "GPIOHANDLE_REQUEST_OPEN_SOURCE, default_values=[1, 2, 3, 4], "
        'consumer_label="line consumer"} => {fd=100}',
    ),
    (
        "GPIO_GET_LINEHANDLE_IOCTL",
        "{lines=4, lineoffsets=[18, 35, 52, 69], flags=0x8000 /* GPIOHANDLE_REQUEST_??? */, "
        'default_values=[1, 2, 3, 4], consumer_label="line consumer"}',
    ),
    (
        "0xc16cb403 /* GPIO_GET_LINEHANDLE_IOCTL */",
        "{lines=4, lineoffsets=[18, 35, 52, 69], flags=0x14 /* GPIOHANDLE_REQUEST_ACTIVE_LOW|"
        "GPIOHANDLE_REQUEST_OPEN_SOURCE */, default_values=[1, 2, 3, 4], "
        'consumer_label="line consumer"} => {fd=100}',
    ),
    (
        "GPIO_V2_GET_LINEINFO_IOCTL",
        '{offset=57} => {name="line name", consumer="line consumer", '
        "flags=GPIO_V2_LINE_FLAG_ACTIVE_LOW|GPIO_V2_LINE_FLAG_BIAS_PULL_UP, num_attrs=11, "
        "attrs=[{flags=0xafeddeadd0d00000 /* GPIO_V2_LINE_FLAG_??? */}, "
        "{values=0xafeddeadd0d00001}, {debounce_period_us=3503292418}, "
        "{id=4, data=0xafeddeadd0d00003}]}",
    ),
    (
        "GPIO_V2_GET_LINEINFO_IOCTL",
        '{offset=56} => {name="line name", consumer="line consumer", flags=0x102 '
        "/* GPIO_V2_LINE_FLAG_ACTIVE_LOW|GPIO_V2_LINE_FLAG_BIAS_PULL_UP */, num_attrs=1, "
        "attrs=[{id=2, padding=0xfeedface, data=0xdeadbeefba11c0da}]}",
    ),
    (
        "GPIO_V2_GET_LINE_IOCTL",
        "{num_lines=4, offsets=[18, 35, 52, 69], config={flags=0, num_attrs=0}, "
        'consumer="line consumer", padding=[0, 0xfeedface, 0, 0, 0]} => {fd=100}',
    ),
    (
        "GPIO_V2_LINE_SET_CONFIG_IOCTL",
        "{flags=GPIO_V2_LINE_FLAG_ACTIVE_LOW|GPIO_V2_LINE_FLAG_BIAS_PULL_UP, num_attrs=1, "
        "attrs=[{attr={id=1, padding=0xfeedface, data=0xdeadbeefba11c0da}, mask=0x1}]}",
    ),
    (
        "GPIO_V2_LINE_SET_CONFIG_IOCTL",
        "{flags=0x102 /* GPIO_V2_LINE_FLAG_ACTIVE_LOW|GPIO_V2_LINE_FLAG_BIAS_PULL_UP */, "
        "num_attrs=2, attrs=[{flags=0x102 /* GPIO_V2_LINE_FLAG_ACTIVE_LOW|"
        "GPIO_V2_LINE_FLAG_BIAS_PULL_UP */, mask=0x1}, {flags=0x8000 "
        "/* GPIO_V2_LINE_FLAG_??? */, mask=0x3}]}",
    ),
    ("GPIO_V2_LINE_GET_VALUES_IOCTL", "{mask=0xfadebeaddeedbabe} => {bits=0xcacafeedfacecafe}"),
    ("_IOC(_IOC_READ|_IOC_WRITE, 0xb4, 0x5e, 0xfed)", "0xdeadbeefbadc0ded"),
    # KDFONTOP (ioctl_kd.c)
    (
        "KDFONTOP",
        "{op=KD_FONT_OP_SET, flags=KD_FONT_FLAG_DONT_RECALC|0xfffffffe, width=1, height=2, "
        'charcount=3, data="\\x01\\x02\\x03"...}',
    ),
    ("KDFONTOP", "{op=0x4 /* KD_FONT_OP_COPY */, flags=0, width=0, height=0, charcount=0, data=NULL}"),
    (
        "KDFONTOP",
        "{op=0xdeadbeef /* KD_FONT_OP_??? */, flags=0xcafe, width=3, height=4, "
        "charcount=5, data=0x7ffc0000} => {width=3, height=4, charcount=5, "
        'data="\\x01"...}',
    ),
    # V4L2 (ioctl_v4l2.c)
    (
        "VIDIOC_QUERYCAP",
        '{driver="cx18", card="Hauppauge HVR-1600", bus_info="PCI:0000:02:01.0", '
        "version=KERNEL_VERSION(3, 2, 1), capabilities=V4L2_CAP_VIDEO_CAPTURE|"
        "V4L2_CAP_DEVICE_CAPS|0x1, device_caps=V4L2_CAP_VIDEO_CAPTURE}",
    ),
    (
        "VIDIOC_S_EXT_CTRLS",
        "{ctrl_class=0x9a0000 /* V4L2_CTRL_CLASS_CAMERA */, count=2, "
        "controls=[{id=0x9a0901 /* V4L2_CID_EXPOSURE_AUTO */, size=0, value=-559038737, "
        "value64=-2401053089206453570}, {id=V4L2_CID_EXPOSURE_ABSOLUTE, size=2, "
        'string="\\xbe\\xba"}]...} => {error_idx=1}',
    ),
    ("VIDIOC_ENUMINPUT", '{index=0} => {name="Television", type=V4L2_INPUT_TYPE_TUNER}'),
    (
        "VIDIOC_S_FMT",
        "{type=V4L2_BUF_TYPE_VIDEO_CAPTURE, fmt.pix={width=640, height=480, "
        "pixelformat=v4l2_fourcc('Y', 'U', 'Y', 'V') /* V4L2_PIX_FMT_YUYV */, "
        "field=V4L2_FIELD_NONE, bytesperline=1280, sizeimage=614400, "
        "colorspace=V4L2_COLORSPACE_SRGB}}",
    ),
    (
        "VIDIOC_S_CROP",
        "{type=V4L2_BUF_TYPE_VIDEO_OUTPUT, c={left=-559038737, top=-889275714, width=3735928559, height=3405691582}}",
    ),
    # SECCOMP user notifications (ioctl_seccomp.c)
    (
        "SECCOMP_IOCTL_NOTIF_SEND",
        "{id=0xdeadbeeffacefeed, val=-1152921504606846976, error=-ENOSR, flags=SECCOMP_USER_NOTIF_FLAG_CONTINUE}",
    ),
    (
        "SECCOMP_IOCTL_NOTIF_SEND",
        "{id=0xdeadbeeffacefeed, val=-9223372036854775808, error=-1234567 /* -E??? */, "
        "flags=0xfffffffe /* SECCOMP_USER_NOTIF_FLAG_??? */}",
    ),
    (
        "SECCOMP_IOCTL_NOTIF_RECV",
        "{id=0xdeadbeeffacefeed, pid=4294967295, flags=0, data={nr=__NR_write, "
        "arch=AUDIT_ARCH_X86_64, instruction_pointer=0x7f0000001000, "
        "args=[0x1, 0x7ffc00000000, 0xd, 0, 0, 0]}}",
    ),
    (
        "SECCOMP_IOCTL_NOTIF_ADDFD",
        "{id=0xdeadbeeffacefeed, flags=SECCOMP_ADDFD_FLAG_SETFD, srcfd=0</dev/null>, newfd=1, newfd_flags=O_CLOEXEC}",
    ),
    ("SECCOMP_IOCTL_NOTIF_ID_VALID", "[0xdeadbeeffacefeed]"),
    # UBI (ioctl_ubi.c)
    (
        "UBI_IOCMKVOL",
        "{vol_id=-559038737, alignment=3405691582, bytes=-2401053089206453570, "
        "vol_type=UBI_STATIC_VOLUME, flags=UBI_VOL_SKIP_CRC_CHECK_FLG, name_len=7, "
        'name="foo\\"bar"} => {vol_id=3}',
    ),
    ("UBI_IOCMKVOL", '{vol_id=0, alignment=1, bytes=0, vol_type=0x3 /* UBI_???_VOLUME */, name_len=0, name=""}'),
    ("UBI_IOCRSVOL", "{bytes=1048576, vol_id=3}"),
    # PTP (ioctl_ptp.c)
    ("PTP_EXTTS_REQUEST", "{index=1, flags=PTP_ENABLE_FEATURE|PTP_RISING_EDGE|0xfff0, rsv=[0xdeadbeef, 0]}"),
    ("PTP_EXTTS_REQUEST2", "{index=3735928559, flags=0}"),
    ("PTP_PEROUT_REQUEST", "{index=0, period={sec=-1, nsec=4294967295}, start={sec=1, nsec=2}, flags=0}"),
    # SG_IO (ioctl_sg_io_v3.c, ioctl_sg_io_v4.c)
    (
        "SG_IO",
        "{interface_id='S', dxfer_direction=SG_DXFER_NONE, cmd_len=12, "
        'cmdp="\\x12\\x00\\x00\\x00\\x24\\x00", mx_sb_len=32, iovec_count=0, dxfer_len=0, '
        "timeout=4294967295, flags=SG_FLAG_DIRECT_IO|0xfffe, dxferp=NULL, sbp=NULL, "
        "pack_id=-1, usr_ptr=NULL} => {status=0x2, masked_status=0x1, msg_status=0, "
        "sb_len_wr=0, host_status=0, driver_status=0, resid=0, duration=0, info=SG_INFO_OK}",
    ),
    ("SG_IO", "{interface_id='\\377', ...}"),
    (
        "SG_IO",
        "{guard='Q', protocol=BSG_PROTOCOL_SCSI, subprotocol=BSG_SUB_PROTOCOL_SCSI_CMD, "
        'request_len=16, request="\\x28\\x00", request_tag=0xdeadbeef, '
        "timeout=4294967295, flags=BSG_FLAG_Q_AT_TAIL}",
    ),
    ("SG_IO", "{interface_id='\"', ...}"),
    # TEE (ioctl_tee.c)
    (
        "TEE_IOC_VERSION",
        "{impl_id=0x1 /* TEE_IMPL_ID_OPTEE */, impl_caps=TEE_OPTEE_CAP_TZ, "
        "gen_caps=TEE_GEN_CAP_GP|TEE_GEN_CAP_PRIVILEGED|0xfffffff0}",
    ),
    (
        "TEE_IOC_SHM_ALLOC",
        "{size=0xdeadbeef, flags=0xfacefeed, id=48879} => {size=0xdeadbeef, flags=0xfacefeed, id=48879}",
    ),
    (
        "TEE_IOC_OPEN_SESSION",
        "{buf_len=200, buf_ptr=0x7ffc00000000, uuid=f0f1f2f3-f4f5-f6f7-f8f9-fafbfcfdfeff, "
        "clnt_login=TEE_IOCTL_LOGIN_PUBLIC, clnt_uuid=00000000-0000-0000-0000-000000000000, "
        "cancel_id=0, num_params=2, params=[{attr=TEE_IOCTL_PARAM_ATTR_TYPE_VALUE_INPUT, "
        "a=0xdeadbeef, b=0xbadc0ded, c=0}, {attr=TEE_IOCTL_PARAM_ATTR_TYPE_MEMREF_INOUT, "
        "shm_offs=0x1000, size=0x20, shm_id=3}]}",
    ),
    ("TEE_IOC_SUPPL_RECV", "{func=0xcafe, num_params=0, params=[]}"),
    # udmabuf (ioctl_udmabuf.c)
    ("UDMABUF_CREATE", "{memfd=0</dev/null>, flags=UDMABUF_FLAGS_CLOEXEC, offset=0, size=0x1000}"),
    (
        "UDMABUF_CREATE",
        "{memfd=-1, flags=0xfffffffe /* UDMABUF_FLAGS_??? */, offset=0xdeadbeef00000000, size=0xffffffffffffffff}",
    ),
    (
        "UDMABUF_CREATE_LIST",
        "{flags=UDMABUF_FLAGS_CLOEXEC, count=2, list=[{memfd=0</dev/null<char 1:3>>, "
        "offset=0, size=0x1000}, {memfd=-1, offset=0x2000, size=0x2000}]}",
    ),
    (
        "UDMABUF_CREATE_LIST",
        "{flags=0, count=3, list=[{memfd=3</memfd:udmabuf (deleted)>, offset=0, size=0x1000}, ...]}",
    ),
    # requests printed as two alternatives (ioctl_mtd.c / ioctl_sound.c)
    ("MIXER_READ(1) or MEMGETINFO", "0xdeadbeef"),
    ("MIXER_WRITE(0) or SOUND_MIXER_WRITE_VOLUME", "[0xdeadbeef]"),
    ("SNDRV_PCM_IOCTL_PVERSION or SNDRV_HWDEP_IOCTL_PVERSION", "0x7ffc00000000"),
]

# whole lines (call text after the prefix), each a call on fd `fd`
CALLS: list[tuple[str, tuple]] = [
    # kvm vcpu fds (ioctl_kvm_run*.c): the decoration ends in "vcpu:0>", the
    # exit reason follows the result
    ("ioctl(5<anon_inode:kvm-vcpu:0>, KVM_RUN, 0) = 0", ("ioctl", 5, 0, None)),
    ("ioctl(5<anon_inode:kvm-vcpu:0>, KVM_RUN, 0) = 0 (KVM_EXIT_HLT)", ("ioctl", 5, 0, None)),
    ("ioctl(6<anon_inode:kvm-vcpu:1>, KVM_RUN, 0) = 0 (???)", ("ioctl", 6, 0, None)),
    ("ioctl(4<anon_inode:kvm-vm>, KVM_CREATE_VCPU, 0) = 5<anon_inode:kvm-vcpu:0>", ("ioctl", 4, 5, None)),
    # prctl values with "<<" inside a comment (prctl-spec-inject.c & co)
    (
        "prctl(PR_SET_SPECULATION_CTRL, PR_SPEC_STORE_BYPASS, "
        "0xc /* PR_SPEC_FORCE_DISABLE|0x3<<2|PR_SPEC_ENABLE */, 0, 0) = 42 (INJECTED)",
        ("prctl", None, 42, None),
    ),
    (
        "prctl(0x35 /* PR_SET_IO_FLUSHER */, 0x1<<5 /* ??? */, 0, 0, 0) = -1 EINVAL (Invalid argument)",
        ("prctl", None, -1, "EINVAL"),
    ),
    (
        "prctl(PR_GET_SPECULATION_CTRL, PR_SPEC_INDIRECT_BRANCH, 0, 0, 0) = "
        "0x13 (PR_SPEC_PRCTL|PR_SPEC_ENABLE|0x3<<3|0x10) (INJECTED)",
        ("prctl", None, 0x13, None),
    ),
]

# not calls: strace's own table printed after the trace (-c, -C,
# --syscall-limit with -c, -S/-U columns)
TABLES = [
    "% time     seconds  usecs/call     calls    errors syscall",
    "------ ----------- ----------- --------- --------- ----------------",
    "100.00    0.000010          10         1           close",
    "  0.00    0.000000           0         3         2 unlinkat",
    "------ ----------- ----------- --------- --------- ----------------",
    "100.00    0.000010           2         4         2 total",
    "calls    errors syscall",
    "--------- --------- ----------------",
    "        1         1 chdir",
    "        3           total",
    "System call usage summary for 32 bit mode:",
    "strace: Process 1234 detached",
    # strace 7.2 -U puts the columns in any order, the name anywhere (as
    # printed by strace 7.2 -c -U …, -w for shortest/longest)
    "syscall              calls    errors % time     seconds  usecs/call shortest  longest",
    "---------------- --------- --------- ------ ----------- ----------- -------- --------",
    "read                     1             0.00    0.000000           0 0.000000 0.000000",
    "ioctl                    1         1   0.00    0.000000           0 0.000000 0.000000",
    "---------------- --------- --------- ------ ----------- ----------- -------- --------",
    "total                   36         2 100.00    0.000000           0 0.000000 0.000000",
    "   errors syscall              calls",
    "--------- ---------------- ---------",
    "        1 ioctl                    1",
    "          read                     1",
    " longest shortest syscall",
    "-------- -------- ----------------",
    "0.000152 0.000152 execve",
]


# a KVM_RUN line and the kvm_run struct strace --kvm=vcpu prints under it
# (ioctl_kvm_run_auxstr_vcpu*.c), before (`<`) and after (`>`) the run
KVM_RUN_MORE = [
    "ioctl(5<anon_inode:kvm-vcpu:0>, KVM_RUN, 0) = 0 (KVM_EXIT_IO)",
    " VCPU:0< {request_interrupt_window=0, immediate_exit=0}",
    " VCPU:0> {request_interrupt_window=0, immediate_exit=0, exit_reason=2 /* KVM_EXIT_IO */, "
    "ready_for_interrupt_injection=1, if_flag=0, flags=0, cr8=0x0000000000000000, "
    "apic_base=0x00000000fee00900, io={direction=KVM_EXIT_IO_OUT, size=1, port=0x3f8, "
    "count=1, data_offset=0x1000}}",
]


def _result(ret: str) -> tuple:
    if ret.startswith("-1 "):
        return (-1, ret.split()[1])
    return (int(ret.split()[0]), None)


def groups():
    """(lines, expected) pairs: lines fed to one parser in order, expected
    the (name, fd, ret, err) of each call they must give, in order."""
    results = [EBADF, INJ, ENOTTY]
    for (req, arg), ret in zip(IOCTLS, itertools.cycle(results)):
        r, err = _result(ret)
        yield [f"ioctl(-1, {req}, {arg}) = {ret}"], [("ioctl", -1, r, err)]
        # each one also with -y decoration of a real fd and a pid prefix
        yield ([f"4242  ioctl(7</dev/gpiochip0>, {req}, {arg}) = {EBADF}"], [("ioctl", 7, -1, "EBADF")])
    for text, want in CALLS:
        yield [text], [want]
        yield ["4242  " + text], [want]
    yield KVM_RUN_MORE, [("ioctl", 5, 0, None)]
    # a call, then the table strace prints at the end
    yield ["close(3) = 0", *TABLES], [("close", 3, 0, None)]


def lines():
    """Every line of every group, in order."""
    for g, _ in groups():
        yield from g


if __name__ == "__main__":
    for line in lines():
        sys.stdout.write(line + "\n")
