//! A FIX door's settings (`--fix-config`): who we are, whom we accept, the sessions we start,
//! and the tables written.

use crate::map::TableNames;
use crate::tls::InitiatorTls;

/// Who we are and whom we accept.
#[derive(Debug, Clone)]
pub struct SessionConfig {
    /// Our CompID: SenderCompID (49) of what we send, TargetCompID (56) we accept.
    pub sender: String,
    /// CompIDs accepted as counterparties (empty: any).
    pub targets: Vec<String>,
    /// Heartbeat interval when the Logon does not give one (HeartBtInt 108), seconds.
    pub heartbeat_secs: u64,
    /// The tables written.
    pub names: TableNames,
    /// Sessions this side starts.
    pub initiators: Vec<InitiatorConfig>,
    /// Run each session on a thread of its own that, once logged on, spins on its socket
    /// instead of sleeping until it is readable: a message is stored microseconds sooner, and
    /// each such session keeps a core busy (at most one session fewer than there are cores,
    /// at least one; further sessions run as usual).
    pub busy_poll: bool,
}

impl Default for SessionConfig {
    fn default() -> SessionConfig {
        SessionConfig {
            sender: "ZEPTO".into(),
            targets: Vec::new(),
            heartbeat_secs: 30,
            names: TableNames::default(),
            initiators: Vec::new(),
            busy_poll: false,
        }
    }
}

/// A session this side starts: where it connects, to whom, and the market data it asks for
/// once logged on. It reconnects when the connection ends.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InitiatorConfig {
    /// `host:port` of the counterparty's acceptor.
    pub connect: String,
    /// The counterparty's CompID (our TargetCompID).
    pub target: String,
    /// HeartBtInt (108) of our Logon, seconds.
    pub heartbeat_secs: u64,
    /// ResetSeqNumFlag (141) on every Logon: both sides start again at 1. Messages sent while
    /// the session was down are then not asked for (exactly once holds within a connection).
    pub reset_on_logon: bool,
    /// The MarketDataRequest (V) sent after each Logon, if any.
    pub subscribe: Option<Subscription>,
    /// Connect over TLS with these settings (`None`: plain TCP).
    pub tls: Option<InitiatorTls>,
}

/// A MarketDataRequest (V): snapshot plus updates (SubscriptionRequestType 1), incremental
/// refresh (MDUpdateType 1).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Subscription {
    /// MDReqID (262).
    pub md_req_id: String,
    /// Symbols (146 / 55).
    pub symbols: Vec<String>,
    /// MDEntryTypes (267 / 269), e.g. `0` bid, `1` offer, `2` trade.
    pub entry_types: Vec<String>,
    /// MarketDepth (264): 0 the full book, 1 the top.
    pub depth: u64,
}
