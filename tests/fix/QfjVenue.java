// A FIX 4.4 acceptor on QuickFIX/J: the venue a ZeptoDB initiator session connects to, in
// crates/zepto-cli/tests/fix_quickfixj.rs. Run as a single source file:
//   java -cp quickfixj-core.jar:quickfixj-messages-fix44.jar:mina-core.jar:slf4j-api.jar \
//        tests/fix/QfjVenue.java PORT COUNT
// It accepts ZEPTO as FEED and prints "listening". At the first MarketDataRequest (V) it
// prints "subscribed SYMBOL" and sends COUNT incremental refreshes (X, one bid each, price
// i for i in 1..=COUNT), one every 5 ms, whether the session is up or not: QuickFIX/J keeps
// each in its store and numbers it, so what ZeptoDB missed while down is resent when it asks.
// Message 10 carries a price that is not a number: ZeptoDB rejects it (printed "reject N").
// After the last it prints "sent COUNT" and stays up until its input closes.

import java.io.ByteArrayInputStream;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.atomic.AtomicBoolean;
import quickfix.*;
import quickfix.field.*;
import quickfix.fix44.MarketDataIncrementalRefresh;

public class QfjVenue {
    static final AtomicBoolean STARTED = new AtomicBoolean();
    static volatile SessionID session;

    static class App extends ApplicationAdapter {
        @Override
        public void onLogon(SessionID id) {
            session = id;
            System.out.println("logon");
        }

        @Override
        public void fromAdmin(Message m, SessionID id) {
            try {
                if (m.getHeader().getString(MsgType.FIELD).equals(MsgType.REJECT)) {
                    System.out.println("reject " + m.getString(RefSeqNum.FIELD));
                }
            } catch (FieldNotFound e) {
                // not ours to judge
            }
        }

        @Override
        public void fromApp(Message m, SessionID id) {
            try {
                if (m.getHeader().getString(MsgType.FIELD).equals(MsgType.MARKET_DATA_REQUEST)) {
                    Group g = new Group(NoRelatedSym.FIELD, Symbol.FIELD);
                    m.getGroup(1, g);
                    String sym = g.getString(Symbol.FIELD);
                    if (STARTED.compareAndSet(false, true)) {
                        System.out.println("subscribed " + sym);
                        new Thread(() -> send(sym)).start();
                    }
                }
            } catch (FieldNotFound e) {
                System.out.println("bad MarketDataRequest: " + e);
            }
        }
    }

    static int count;

    static void send(String sym) {
        try {
            for (int i = 1; i <= count; i++) {
                MarketDataIncrementalRefresh x = new MarketDataIncrementalRefresh();
                x.set(new MDReqID("Z1"));
                MarketDataIncrementalRefresh.NoMDEntries g = new MarketDataIncrementalRefresh.NoMDEntries();
                g.set(new MDUpdateAction(MDUpdateAction.NEW));
                g.set(new MDEntryType(MDEntryType.BID));
                g.set(new Symbol(sym));
                if (i == 10) {
                    g.setString(MDEntryPx.FIELD, "ten");
                } else {
                    g.set(new MDEntryPx(i));
                }
                g.set(new MDEntrySize(1));
                x.addGroup(g);
                Session.sendToTarget(x, session);
                Thread.sleep(5);
            }
            System.out.println("sent " + count);
        } catch (Exception e) {
            System.out.println("send failed: " + e);
        }
    }

    public static void main(String[] args) throws Exception {
        count = Integer.parseInt(args[1]);
        String cfg = String.join("\n",
                "[default]",
                "ConnectionType=acceptor",
                "StartTime=00:00:00",
                "EndTime=00:00:00",
                "UseDataDictionary=Y",
                "DataDictionary=FIX44.xml",
                "[session]",
                "BeginString=FIX.4.4",
                "SenderCompID=FEED",
                "TargetCompID=ZEPTO",
                "SocketAcceptPort=" + args[0],
                "");
        SessionSettings settings = new SessionSettings(new ByteArrayInputStream(cfg.getBytes(StandardCharsets.UTF_8)));
        SocketAcceptor acceptor = new SocketAcceptor(new App(), new MemoryStoreFactory(), settings,
                new ScreenLogFactory(false, false, true), new DefaultMessageFactory());
        acceptor.start();
        System.out.println("listening");
        while (System.in.read() >= 0) {
            // until the test closes our input
        }
        acceptor.stop();
        System.exit(0);
    }
}
