//! An in-memory S3-compatible server for the shared-history tests (gofakes3, built into
//! target/s3/fakes3 by `make s3`; needs Go). Without it a test says so and passes without
//! running, except under `make test` (ZEPTO_REQUIRE_S3=1), where that is a failure.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};

/// The server, killed when dropped.
pub struct FakeS3 {
    child: Child,
    pub addr: String,
}

impl FakeS3 {
    /// A fresh server on a free loopback port (buckets made on first use), or `None`.
    #[allow(dead_code)]
    pub fn start() -> Option<FakeS3> {
        let bin = super::kafka::root().join("target/s3/fakes3");
        if !bin.exists() {
            assert!(std::env::var_os("ZEPTO_REQUIRE_S3").is_none(), "no S3 server: make s3 (needs Go)");
            eprintln!("skipped: no target/s3/fakes3 (make s3)");
            return None;
        }
        let mut child = Command::new(bin).arg("127.0.0.1:0").stdout(Stdio::piped()).spawn().expect("fakes3 runs");
        let mut line = String::new();
        let out = child.stdout.take().expect("its output");
        BufReader::new(out).read_line(&mut line).expect("it says where it listens");
        let addr = line.trim().strip_prefix("listening on ").expect("an address").to_string();
        Some(FakeS3 { child, addr })
    }
}

impl FakeS3 {
    /// The `AWS_*` settings that point an S3 client at this server.
    #[allow(dead_code)]
    pub fn env(&self) -> Vec<(String, String)> {
        [
            ("AWS_ENDPOINT", format!("http://{}", self.addr)),
            ("AWS_ALLOW_HTTP", "true".into()),
            ("AWS_ACCESS_KEY_ID", "test".into()),
            ("AWS_SECRET_ACCESS_KEY", "test".into()),
            ("AWS_REGION", "us-east-1".into()),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v))
        .collect()
    }
}

impl Drop for FakeS3 {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
