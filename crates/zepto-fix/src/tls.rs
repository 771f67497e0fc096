//! TLS for initiator sessions: the client configuration an initiator connects with (the
//! counterparty's certificate checked against a CA file or the system's roots; a client
//! certificate when the venue asks for one), and the name it must carry.

use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, PrivateKeyDer, ServerName};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use tokio_rustls::rustls::{ClientConfig, RootCertStore};

/// An initiator's TLS settings (`"tls"` in `--fix-config`), checked and loaded at start.
#[derive(Clone)]
pub struct InitiatorTls {
    config: Arc<ClientConfig>,
    server_name: ServerName<'static>,
}

impl std::fmt::Debug for InitiatorTls {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("InitiatorTls").field("server_name", &self.server_name).finish_non_exhaustive()
    }
}

impl PartialEq for InitiatorTls {
    /// Equal when they check the same name with the same loaded configuration (one loaded
    /// twice from the same files is two configurations: rustls's have no equality).
    fn eq(&self, other: &InitiatorTls) -> bool {
        self.server_name == other.server_name && Arc::ptr_eq(&self.config, &other.config)
    }
}

impl Eq for InitiatorTls {}

/// Where an initiator's TLS trust and identity come from.
#[derive(Debug, Clone, Default)]
pub struct TlsFiles {
    /// PEM certificates trusted as roots; `None`: the system's roots.
    pub ca_file: Option<PathBuf>,
    /// Our certificate chain and key (PEM), for venues that ask for a client certificate.
    pub client: Option<(PathBuf, PathBuf)>,
}

impl InitiatorTls {
    /// Settings for connecting to `connect` (`host:port`), checking the certificate names
    /// `server_name` (default: the host). Fails with what is wrong: an unreadable or empty file,
    /// no system roots, a bad name.
    pub fn load(connect: &str, server_name: Option<&str>, files: &TlsFiles) -> Result<InitiatorTls, String> {
        let host = server_name.unwrap_or_else(|| connect.rsplit_once(':').map_or(connect, |(h, _)| h));
        let host = host.trim_start_matches('[').trim_end_matches(']');
        let server_name =
            ServerName::try_from(host.to_string()).map_err(|e| format!("'{host}' is no TLS server name: {e}"))?;
        let roots = match &files.ca_file {
            Some(p) => roots_from(p)?,
            None => system_roots()?,
        };
        let provider = Arc::new(tokio_rustls::rustls::crypto::ring::default_provider());
        let builder = ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .map_err(|e| format!("TLS: {e}"))?
            .with_root_certificates(roots);
        let config = match &files.client {
            None => builder.with_no_client_auth(),
            Some((cert, key)) => {
                let chain = certs(cert)?;
                let key = PrivateKeyDer::from_pem_file(key).map_err(|e| format!("{}: {e}", key.display()))?;
                builder.with_client_auth_cert(chain, key).map_err(|e| format!("client certificate: {e}"))?
            }
        };
        Ok(InitiatorTls { config: Arc::new(config), server_name })
    }

    /// The connector and the name to check.
    pub(crate) fn connector(&self) -> (tokio_rustls::TlsConnector, ServerName<'static>) {
        (tokio_rustls::TlsConnector::from(self.config.clone()), self.server_name.clone())
    }
}

fn certs(path: &Path) -> Result<Vec<CertificateDer<'static>>, String> {
    let list = CertificateDer::pem_file_iter(path)
        .and_then(|it| it.collect::<Result<Vec<_>, _>>())
        .map_err(|e| format!("{}: {e}", path.display()))?;
    if list.is_empty() {
        return Err(format!("{}: no PEM certificate in it", path.display()));
    }
    Ok(list)
}

fn roots_from(path: &Path) -> Result<RootCertStore, String> {
    let mut roots = RootCertStore::empty();
    for c in certs(path)? {
        roots.add(c).map_err(|e| format!("{}: {e}", path.display()))?;
    }
    Ok(roots)
}

fn system_roots() -> Result<RootCertStore, String> {
    let found = rustls_native_certs::load_native_certs();
    let mut roots = RootCertStore::empty();
    let (added, _) = roots.add_parsable_certificates(found.certs);
    if added == 0 {
        return Err(format!("no trusted roots found on this system ({:?}); give a ca_file", found.errors));
    }
    Ok(roots)
}
