//! What every door does to the TCP connections it accepts: TCP keepalive, so a client that
//! vanished without closing (its machine lost power, a NAT or firewall forgot the flow) is
//! found and its connection closed within about two minutes of silence. Without it such a
//! connection stays open for good, holding one of the door's `--max-connections` and
//! whatever it held: a COPY's rows and their share of the in-flight budget, an ILP
//! connection's partial batch, a subscription. PostgreSQL turns keepalive on for the same
//! reason (with the kernel's two-hour default; ours is shorter because the doors' slots are
//! fewer).

use std::time::Duration;

/// Silence on a connection before the first probe.
pub const KEEPALIVE_IDLE: Duration = Duration::from_secs(60);

/// Between unanswered probes.
pub const KEEPALIVE_INTERVAL: Duration = Duration::from_secs(10);

/// Unanswered probes before the kernel closes the connection.
pub const KEEPALIVE_PROBES: u32 = 6;

/// Turn TCP keepalive on for `stream` ([`KEEPALIVE_IDLE`], [`KEEPALIVE_INTERVAL`],
/// [`KEEPALIVE_PROBES`]). A socket that refuses it keeps working without it.
pub fn keep_alive(stream: &tokio::net::TcpStream) {
    let params = socket2::TcpKeepalive::new()
        .with_time(KEEPALIVE_IDLE)
        .with_interval(KEEPALIVE_INTERVAL)
        .with_retries(KEEPALIVE_PROBES);
    if let Err(e) = socket2::SockRef::from(stream).set_tcp_keepalive(&params) {
        eprintln!("zeptodb: TCP keepalive not set on a connection: {e}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn accepted_connections_probe_a_silent_peer() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let addr = listener.local_addr().expect("address");
        let client = tokio::net::TcpStream::connect(addr).await.expect("connect");
        let (server, _) = listener.accept().await.expect("accept");
        let sock = socket2::SockRef::from(&server);
        assert!(!sock.keepalive().expect("read SO_KEEPALIVE"), "off until asked for");
        keep_alive(&server);
        assert!(sock.keepalive().expect("read SO_KEEPALIVE"));
        assert_eq!(sock.tcp_keepalive_time().expect("TCP_KEEPIDLE"), KEEPALIVE_IDLE);
        assert_eq!(sock.tcp_keepalive_interval().expect("TCP_KEEPINTVL"), KEEPALIVE_INTERVAL);
        assert_eq!(sock.tcp_keepalive_retries().expect("TCP_KEEPCNT"), KEEPALIVE_PROBES);
        drop(client);
    }
}
