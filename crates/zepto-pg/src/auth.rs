//! Startup: who connects. With API keys configured, the client's password is an API key (the
//! user name is free: the key says who it is, as `Authorization: Bearer` does on HTTP), and
//! the key's role, table grants and tenant bind the connection. Without keys (loopback only)
//! every connection is the anonymous admin and no password is asked for.
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
use pgwire::error::{PgWireError, PgWireResult};
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
    driver: AuthDriver<DefaultServerParameterProvider, Principal>,
}

impl Startup {
    /// Authenticate against `keys`, registering connections with `manager` (for cancel).
    pub fn new(keys: Arc<KeyStore>, manager: Arc<ConnectionManager>) -> Startup {
        let mut params = DefaultServerParameterProvider::default();
        params.server_version = SERVER_VERSION.to_string();
        Startup { keys, driver: AuthDriver::new(params).with_connection_manager(manager) }
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
                let mechanism = Box::new(KeyAuth { keys: self.keys.clone() });
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
}

#[async_trait]
impl AuthMechanism<Principal> for KeyAuth {
    async fn begin(&mut self, _: &(dyn ClientInfo + Send + Sync)) -> PgWireResult<AuthState<Principal>> {
        if self.keys.is_empty() {
            return Ok(AuthState::Ok { final_message: None, identity: Some(Principal::anonymous_admin()) });
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
