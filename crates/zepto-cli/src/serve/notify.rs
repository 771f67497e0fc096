//! systemd's readiness protocol (`sd_notify`), by hand: one datagram to the socket named by
//! `$NOTIFY_SOCKET`, when the service manager set one (`Type=notify`, `deploy/`). `READY=1`
//! once every door listens, `STOPPING=1` once the HTTP door has stopped (before the other
//! doors close and the checkpoint on exit). Without the variable nothing is
//! sent; a failed send is reported once on stderr and never stops the server.

use std::os::unix::net::UnixDatagram;

/// Send `state` (`KEY=value` lines) to the service manager, if one is listening.
pub(super) fn notify(state: &str) {
    let Some(path) = std::env::var_os("NOTIFY_SOCKET") else { return };
    if let Err(e) = send(&path, state) {
        eprintln!("zeptodb: could not notify the service manager ({}): {e}", path.to_string_lossy());
    }
}

fn send(path: &std::ffi::OsStr, state: &str) -> std::io::Result<()> {
    use std::os::unix::ffi::OsStrExt;
    let sock = UnixDatagram::unbound()?;
    let bytes = path.as_bytes();
    // A leading '@' names a socket in the abstract namespace.
    if let Some(name) = bytes.strip_prefix(b"@") {
        use std::os::linux::net::SocketAddrExt;
        let addr = std::os::unix::net::SocketAddr::from_abstract_name(name)?;
        sock.send_to_addr(state.as_bytes(), &addr)?;
    } else {
        sock.send_to(state.as_bytes(), path)?;
    }
    Ok(())
}
