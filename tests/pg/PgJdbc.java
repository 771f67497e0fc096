// The PostgreSQL JDBC driver (pgjdbc, Maven Central) against ZeptoDB's PostgreSQL door, in
// crates/zepto-cli/tests/pg.rs. Run as a single source file:
//   java -Duser.timezone=UTC -cp postgresql.jar tests/pg/PgJdbc.java PORT PASSWORD
// It prints what it read, one line each, for the test to compare with the HTTP door's answers:
// the product name and version; rows inserted through a PreparedStatement (setTimestamp,
// setString, setDouble, setLong) and read back through one executed six times (pgjdbc then
// switches to a named server-side statement and binary results); a sum read with a fetch size
// of 3 (a portal paged by row limits); the SQLSTATE of an error; 100,000 rows copied in and
// out through the driver's CopyManager (COPY FROM STDIN, COPY TO STDOUT); DatabaseMetaData's
// getSchemas, getTables, getColumns, getPrimaryKeys and getIndexInfo (its own catalog queries,
// with _pg_expandarray, array subscripts and bitwise operators, run on the engine's pg_catalog;
// a vector index is listed).

import java.io.*;
import java.nio.charset.StandardCharsets;
import java.sql.*;
import org.postgresql.PGConnection;
import org.postgresql.copy.CopyManager;

public class PgJdbc {
    public static void main(String[] args) throws Exception {
        String url = "jdbc:postgresql://127.0.0.1:" + args[0] + "/zepto";
        try (Connection c = DriverManager.getConnection(url, "quant", args[1])) {
            DatabaseMetaData md = c.getMetaData();
            System.out.println("product " + md.getDatabaseProductName() + " " + md.getDatabaseMajorVersion());
            try (Statement s = c.createStatement()) {
                s.execute("CREATE TABLE jd (ts TIMESTAMP, sym SYMBOL, price DOUBLE, size BIGINT)");
            }
            try (PreparedStatement p = c.prepareStatement("INSERT INTO jd VALUES (?, ?, ?, ?)")) {
                for (int i = 0; i < 10; i++) {
                    p.setTimestamp(1, Timestamp.valueOf("2024-01-02 09:30:0" + i + ".25"));
                    p.setString(2, "S" + (i % 3));
                    p.setDouble(3, 100.5 + i);
                    p.setLong(4, 10L * i);
                    if (p.executeUpdate() != 1) {
                        throw new IllegalStateException("one row per INSERT");
                    }
                }
            }
            try (PreparedStatement p = c.prepareStatement("SELECT ts, sym, price, size FROM jd WHERE size >= ? ORDER BY ts")) {
                for (int round = 1; round <= 6; round++) {
                    p.setLong(1, 60);
                    try (ResultSet r = p.executeQuery()) {
                        while (r.next()) {
                            if (round == 6) {
                                System.out.println("row " + r.getTimestamp(1) + "|" + r.getString(2) + "|" + r.getDouble(3) + "|" + r.getLong(4));
                            }
                        }
                    }
                }
            }
            c.setAutoCommit(false);
            try (Statement s = c.createStatement()) {
                s.setFetchSize(3);
                long sum = 0;
                int n = 0;
                try (ResultSet r = s.executeQuery("SELECT size FROM jd ORDER BY size")) {
                    while (r.next()) {
                        sum += r.getLong(1);
                        n++;
                    }
                }
                System.out.println("paged " + n + " " + sum);
            }
            c.commit();
            c.setAutoCommit(true);
            copy(c);
            metadata(md);
            try (Statement s = c.createStatement()) {
                s.executeQuery("SELECT nosuch FROM jd");
                System.out.println("error none");
            } catch (SQLException e) {
                System.out.println("error " + e.getSQLState());
            }
        }
    }

    /** 100,000 CSV rows in through CopyManager.copyIn, then out through copyOut: counts and a
     *  checksum of what came back. */
    static void copy(Connection c) throws Exception {
        try (Statement s = c.createStatement()) {
            s.execute("CREATE TABLE jc (n BIGINT, sym VARCHAR)");
        }
        StringBuilder csv = new StringBuilder();
        for (int i = 0; i < 100_000; i++) {
            csv.append(i).append(",\"s,").append(i % 7).append("\"\n");
        }
        CopyManager cm = c.unwrap(PGConnection.class).getCopyAPI();
        byte[] in = csv.toString().getBytes(StandardCharsets.UTF_8);
        long loaded = cm.copyIn("COPY jc FROM STDIN (FORMAT csv)", new ByteArrayInputStream(in));
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        long written = cm.copyOut("COPY (SELECT n, sym FROM jc ORDER BY n) TO STDOUT (FORMAT csv)", out);
        boolean same = out.toString(StandardCharsets.UTF_8).equals(csv.toString());
        System.out.println("copy " + loaded + " " + written + " " + same);
    }

    /** What DBeaver and Metabase ask on connect: the schemas, a schema's tables, a table's
     *  columns. */
    static void metadata(DatabaseMetaData md) throws Exception {
        StringBuilder schemas = new StringBuilder("schemas");
        try (ResultSet r = md.getSchemas()) {
            while (r.next()) {
                schemas.append(' ').append(r.getString("TABLE_SCHEM"));
            }
        }
        System.out.println(schemas);
        StringBuilder tables = new StringBuilder("tables");
        try (ResultSet r = md.getTables(null, "public", "%", new String[] {"TABLE"})) {
            while (r.next()) {
                tables.append(' ').append(r.getString("TABLE_SCHEM")).append('.').append(r.getString("TABLE_NAME"));
            }
        }
        System.out.println(tables);
        StringBuilder cols = new StringBuilder("columns");
        try (ResultSet r = md.getColumns(null, "public", "jd", "%")) {
            while (r.next()) {
                cols.append(' ').append(r.getString("COLUMN_NAME")).append(':').append(r.getString("TYPE_NAME"))
                    .append(':').append(r.getInt("DATA_TYPE")).append(':').append(r.getInt("ORDINAL_POSITION"));
            }
        }
        System.out.println(cols);
        StringBuilder keys = new StringBuilder("keys");
        try (ResultSet r = md.getPrimaryKeys(null, "public", "jd")) {
            while (r.next()) {
                keys.append(' ').append(r.getString("COLUMN_NAME"));
            }
        }
        System.out.println(keys);
        try (Statement s = md.getConnection().createStatement()) {
            s.execute("CREATE TABLE jv (id BIGINT, emb FLOAT[3])");
            s.execute("CREATE INDEX jv_emb ON jv USING hnsw (emb)");
        }
        for (String t : new String[] {"jd", "jv"}) {
            StringBuilder idx = new StringBuilder("indexes " + t);
            try (ResultSet r = md.getIndexInfo(null, "public", t, false, false)) {
                while (r.next()) {
                    idx.append(' ').append(r.getString("INDEX_NAME")).append(':').append(r.getString("COLUMN_NAME"))
                        .append(':').append(r.getInt("ORDINAL_POSITION")).append(':').append(r.getBoolean("NON_UNIQUE"))
                        .append(':').append(r.getString("ASC_OR_DESC"));
                }
            }
            System.out.println(idx);
        }
    }
}
