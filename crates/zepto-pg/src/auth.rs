//! Startup: who connects. With API keys configured, the client's password is an API key (the
//! user name is free: the key says who it is, as `Authorization: Bearer` does on HTTP), and
//! the key's role, table grants and tenant bind the connection. Without keys (loopback only)
//! every connection is the anonymous admin and no password is asked for.
//!
//! With TLS configured, a key crosses the network only encrypted: a plain connection from
//! another host is refused (FATAL 28000) before the password is asked for, as a `hostssl`
//! line of PostgreSQL's `pg_hba.conf` refuses it. Plain connections over loopback stay
//! allowed (the key never leaves the host).
//!
//! The principal is kept in the connection's session extensions, where the query handlers
//! read it ([`principal`]).

use async_trait::async_trait;
use futures::Sink;
use pgwire::api::auth::driver::{AuthDriver, AuthOutcome};
use pgwire::api::auth::mechanism::{AuthMechanism, AuthState};
use pgwire::api::auth::{
    protocol_negotiation, save_startup_parameters_to_metadata, DefaultServerParameterProvider, StartupHandler,
};
use pgwire::api::{ClientInfo, ConnectionManager};
use pgwire::error::{ErrorInfo, PgWireError, PgWireResult};
use pgwire::messages::startup::{Authentication, PasswordMessageFamily};
use pgwire::messages::{PgWireBackendMessage, PgWireFrontendMessage};
use std::fmt::Debug;
use std::sync::Arc;
use zepto_server::auth::{KeyStore, Principal};

/// The version string clients see: PostgreSQL's major version whose catalog and protocol we
/// follow (drivers pick their queries by it), then ours.
pub const SERVER_VERSION: &str = concat!("16.0 (ZeptoDB ", env!("CARGO_PKG_VERSION"), ")");

/// The startup handler: API key as password, then the usual parameters.
pub struct Startup {
    keys: Arc<KeyStore>,
    /// TLS is configured: keys from other hosts only over it (module docs).
    tls: bool,
    driver: AuthDriver<DefaultServerParameterProvider, Principal>,
}

impl Startup {
    /// Authenticate against `keys` (over TLS from other hosts when `tls` is configured),
    /// registering connections with `manager` (for cancel).
    pub fn new(keys: Arc<KeyStore>, tls: bool, manager: Arc<ConnectionManager>) -> Startup {
        let mut params = DefaultServerParameterProvider::default();
        params.server_version = SERVER_VERSION.to_string();
        Startup { keys, tls, driver: AuthDriver::new(params).with_connection_manager(manager) }
    }

    async fn finish<C>(&self, client: &mut C, outcome: AuthOutcome<Principal>) -> PgWireResult<()>
    where
        C: ClientInfo + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        match outcome {
            AuthOutcome::InProgress => Ok(()),
            AuthOutcome::Authenticated { identity, final_message } => {
                // No identity, no entry: a mechanism that names nobody never means "admin".
                let user = client.metadata().get("user").cloned().unwrap_or_default();
                let who = identity.ok_or(PgWireError::InvalidPassword(user))?;
                client.session_extensions().insert(who);
                self.driver.complete_authentication(client, final_message).await
            }
        }
    }
}

/// The connection's principal (set at startup; a connection without one never got past it).
pub fn principal<C: ClientInfo + ?Sized>(client: &C) -> PgWireResult<Arc<Principal>> {
    client.session_extensions().get::<Principal>().ok_or(PgWireError::NoAuthenticationInProgress)
}

#[async_trait]
impl StartupHandler for Startup {
    async fn on_startup<C>(&self, client: &mut C, message: PgWireFrontendMessage) -> PgWireResult<()>
    where
        C: ClientInfo + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        match message {
            PgWireFrontendMessage::Startup(ref startup) => {
                protocol_negotiation(client, startup).await?;
                save_startup_parameters_to_metadata(client, startup);
                let mechanism = Box::new(KeyAuth { keys: self.keys.clone(), tls: self.tls });
                let outcome = self.driver.begin_authentication(client, mechanism).await?;
                self.finish(client, outcome).await
            }
            PgWireFrontendMessage::PasswordMessageFamily(m) => {
                let outcome = self.driver.advance_authentication(client, m).await?;
                self.finish(client, outcome).await
            }
            _ => Ok(()),
        }
    }
}

/// One connection's authentication: a cleartext password checked as an API key.
struct KeyAuth {
    keys: Arc<KeyStore>,
    tls: bool,
}

/// Whether a key must not be asked for on this connection: TLS is configured (`tls`), the
/// connection is plain (`secure` false) and comes from another host (module docs).
fn key_needs_tls(tls: bool, secure: bool, peer: std::net::IpAddr) -> bool {
    // An IPv4 client of a dual-stack listener shows as `::ffff:127.0.0.1`.
    tls && !secure && !peer.to_canonical().is_loopback()
}

#[async_trait]
impl AuthMechanism<Principal> for KeyAuth {
    async fn begin(&mut self, client: &(dyn ClientInfo + Send + Sync)) -> PgWireResult<AuthState<Principal>> {
        if self.keys.is_empty() {
            return Ok(AuthState::Ok { final_message: None, identity: Some(Principal::anonymous_admin()) });
        }
        if key_needs_tls(self.tls, client.is_secure(), client.socket_addr().ip()) {
            let why = "this server takes keys from other hosts over TLS only: connect with sslmode=require";
            let info = ErrorInfo::new("FATAL".into(), "28000".into(), why.into());
            return Ok(AuthState::Failed(PgWireError::UserError(Box::new(info))));
        }
        Ok(AuthState::InProgress(Authentication::CleartextPassword))
    }

    async fn next(
        &mut self,
        client: &(dyn ClientInfo + Send + Sync),
        message: PasswordMessageFamily,
    ) -> PgWireResult<AuthState<Principal>> {
        let password = message.into_password()?.password;
        let user = client.metadata().get("user").cloned().unwrap_or_default();
        match self.keys.authenticate(Some(&format!("Bearer {password}"))) {
            Ok(who) => Ok(AuthState::Ok { final_message: None, identity: Some(who) }),
            Err(_) => Ok(AuthState::Failed(PgWireError::InvalidPassword(user))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::key_needs_tls;
    use std::net::IpAddr;

    #[test]
    fn keys_from_other_hosts_need_tls_once_it_is_configured() {
        let ip = |s: &str| s.parse::<IpAddr>().expect("an address");
        let (far, near, near6, mapped) = (ip("10.1.2.3"), ip("127.0.0.1"), ip("::1"), ip("::ffff:127.0.0.1"));
        assert!(key_needs_tls(true, false, far), "plain, from another host, TLS configured");
        assert!(!key_needs_tls(true, true, far), "over TLS");
        assert!(!key_needs_tls(true, false, near) && !key_needs_tls(true, false, near6), "loopback");
        assert!(!key_needs_tls(true, false, mapped), "IPv4 loopback through a dual-stack listener");
        assert!(key_needs_tls(true, false, ip("::ffff:10.1.2.3")), "another host through it");
        assert!(!key_needs_tls(false, false, far), "no TLS configured: nothing to ask for");
    }
}
