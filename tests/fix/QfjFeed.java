// A FIX 4.4 initiator on QuickFIX/J, the counterparty of ZeptoDB's FIX door in
// crates/zepto-cli/tests/fix_quickfixj.rs. Run as a single source file:
//   java -cp quickfixj-core.jar:quickfixj-messages-fix44.jar:mina-core.jar:slf4j-api.jar \
//        tests/fix/QfjFeed.java PORT
// It logs on as FEED to ZEPTO, sends a snapshot (W, 3 entries), an incremental refresh (X, 2
// entries) and an execution report (8), then skips one sequence number before a second X (a
// forced gap: ZeptoDB asks for a resend, QuickFIX/J answers with a gap fill and the X again
// with PossDupFlag), waits, logs out and exits 0; 1 if it never logged on.

import java.io.ByteArrayInputStream;
import java.nio.charset.StandardCharsets;
import java.time.LocalDate;
import java.time.LocalDateTime;
import java.time.LocalTime;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import quickfix.*;
import quickfix.field.*;
import quickfix.fix44.ExecutionReport;
import quickfix.fix44.MarketDataIncrementalRefresh;
import quickfix.fix44.MarketDataSnapshotFullRefresh;

public class QfjFeed {
    static final CountDownLatch LOGGED_ON = new CountDownLatch(1);
    static final CountDownLatch RESEND_SEEN = new CountDownLatch(1);

    static class App extends ApplicationAdapter {
        @Override
        public void onLogon(SessionID id) {
            LOGGED_ON.countDown();
        }

        @Override
        public void fromAdmin(Message m, SessionID id) {
            try {
                if (m.getHeader().getString(MsgType.FIELD).equals(MsgType.RESEND_REQUEST)) {
                    RESEND_SEEN.countDown();
                }
            } catch (FieldNotFound e) {
                // not ours to judge
            }
        }
    }

    static MarketDataSnapshotFullRefresh snapshot() {
        MarketDataSnapshotFullRefresh w = new MarketDataSnapshotFullRefresh();
        w.set(new MDReqID("R1"));
        w.set(new Symbol("EURUSD"));
        Object[][] entries = {
            {MDEntryType.BID, 1.0841, 1000000.0, LocalTime.of(9, 30, 0, 120_000_000)},
            {MDEntryType.OFFER, 1.0843, 2000000.0, LocalTime.of(9, 30, 0, 121_000_000)},
            {MDEntryType.TRADE, 1.0842, 500000.0, LocalTime.of(9, 29, 59, 999_000_000)},
        };
        for (Object[] e : entries) {
            MarketDataSnapshotFullRefresh.NoMDEntries g = new MarketDataSnapshotFullRefresh.NoMDEntries();
            g.set(new MDEntryType((Character) e[0]));
            g.set(new MDEntryPx((Double) e[1]));
            g.set(new MDEntrySize((Double) e[2]));
            g.set(new MDEntryDate(LocalDate.of(2024, 1, 2)));
            g.set(new MDEntryTime((LocalTime) e[3]));
            w.addGroup(g);
        }
        return w;
    }

    static MarketDataIncrementalRefresh incremental(double bid, double offer) {
        MarketDataIncrementalRefresh x = new MarketDataIncrementalRefresh();
        x.set(new MDReqID("R2"));
        double[][] entries = {{0, bid}, {1, offer}};
        for (double[] e : entries) {
            MarketDataIncrementalRefresh.NoMDEntries g = new MarketDataIncrementalRefresh.NoMDEntries();
            g.set(new MDUpdateAction(MDUpdateAction.NEW));
            g.set(new MDEntryType(e[0] == 0 ? MDEntryType.BID : MDEntryType.OFFER));
            g.set(new Symbol("GBPUSD"));
            g.set(new MDEntryPx(e[1]));
            g.set(new MDEntrySize(5));
            x.addGroup(g);
        }
        return x;
    }

    static ExecutionReport execution() {
        ExecutionReport r = new ExecutionReport(new OrderID("O1"), new ExecID("E1"), new ExecType(ExecType.TRADE),
                new OrdStatus(OrdStatus.FILLED), new Side(Side.BUY), new LeavesQty(0), new CumQty(100), new AvgPx(101.5));
        r.set(new ClOrdID("C1"));
        r.set(new Symbol("IBM"));
        r.set(new LastPx(101.5));
        r.set(new LastQty(100));
        r.set(new TransactTime(LocalDateTime.of(2024, 1, 2, 9, 30, 1)));
        return r;
    }

    public static void main(String[] args) throws Exception {
        String cfg = String.join("\n",
                "[default]",
                "ConnectionType=initiator",
                "HeartBtInt=30",
                "ReconnectInterval=1",
                "StartTime=00:00:00",
                "EndTime=00:00:00",
                "UseDataDictionary=Y",
                "DataDictionary=FIX44.xml",
                "ResetOnLogon=Y",
                "[session]",
                "BeginString=FIX.4.4",
                "SenderCompID=FEED",
                "TargetCompID=ZEPTO",
                "SocketConnectHost=127.0.0.1",
                "SocketConnectPort=" + args[0],
                "");
        SessionSettings settings = new SessionSettings(new ByteArrayInputStream(cfg.getBytes(StandardCharsets.UTF_8)));
        SocketInitiator initiator = new SocketInitiator(new App(), new MemoryStoreFactory(), settings,
                new ScreenLogFactory(true, true, true), new DefaultMessageFactory());
        initiator.start();
        if (!LOGGED_ON.await(20, TimeUnit.SECONDS)) {
            System.err.println("QfjFeed: no logon");
            System.exit(1);
        }
        SessionID id = initiator.getSessions().get(0);
        Session.sendToTarget(snapshot(), id);
        Session.sendToTarget(incremental(1.25, 1.26), id);
        Session.sendToTarget(execution(), id);
        // The forced gap: one number never sent.
        Session session = Session.lookupSession(id);
        session.setNextSenderMsgSeqNum(session.getStore().getNextSenderMsgSeqNum() + 1);
        Session.sendToTarget(incremental(1.30, 1.31), id);
        if (!RESEND_SEEN.await(20, TimeUnit.SECONDS)) {
            System.err.println("QfjFeed: no ResendRequest for the gap");
            System.exit(1);
        }
        Thread.sleep(1000);
        initiator.stop();
        System.exit(0);
    }
}
