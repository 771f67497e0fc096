"""The hand-written query corpus, one function per generated file.

Each function receives an SltFile `f` and calls
    f.q(sql, sort="rowsort"|"nosort", duck=None, us_ok=False)   a query with DuckDB's answer
    f.ok(sql) / f.err(sql)                                       statements that must succeed / fail
    f.comment(text)
SQL is written in the ZeptoDB dialect; keep translated keywords (TIMESTAMP, SYMBOL) upper case.
`duck=` gives an explicit DuckDB rewrite for a construct DuckDB spells differently.
Use "nosort" only with an ORDER BY that totally orders the output (the generator verifies this
by re-running every query on a copy of the data loaded in reverse order).
"""
import common


# --------------------------------------------------------------------------------------
def s01_select_arith(f):
    f.comment("Literals, operator precedence, integer vs float division (SELECT without FROM)")
    f.q("SELECT 1 + 2 * 3, (1 + 2) * 3, 10 - 4 - 3, 2 * 3 % 4, 100 // 7 // 2")
    f.q("SELECT 7 / 2, 8 / 2, -7 / 2, 1 / 3")
    f.q("SELECT 7 // 2, -7 // 2, 7 // -2, -7 // -2, 0 // 5")
    f.q("SELECT 7 % 3, -7 % 3, 7 % -3, -7 % -3, 0 % 4")
    f.comment("division and modulo by zero give NULL (SPEC 3)")
    f.q("SELECT 1 / 0, 1 // 0, 5 % 0, 0 / 0")
    f.q("SELECT -(3), - -3, -2 * -3, 2 - -2, -(1 + 2) * 3")
    f.q("SELECT 1.5 + 2, 0.25 * 4, 10 / 4, 3 * 0.5 - 1")
    f.q("SELECT 'abc', 'it''s', 42, true, false")
    f.q("SELECT 3 > 2, 3 < 2, 2 = 2, 2 <> 2, 2 != 3, 2 >= 2, 2 <= 1")
    f.q("SELECT NOT true, true AND false, true OR false, NOT false AND false, false OR true AND false")
    f.q("SELECT 1 + 2 = 3, 2 * 3 > 5 AND 1 < 2, NOT 1 = 2")
    f.q("SELECT 10 // 3 * 3 + 10 % 3, 2 + 3 * 4 - 6 / 2")
    f.q("select 1 + 1 as two, 'lower case keywords' as msg")

    f.comment("column projections")
    f.q("SELECT * FROM nums")
    f.q("SELECT k, n, m, n + m, n - m, n * 2, m * 3 FROM nums")
    f.q("SELECT k, n * n, n * m, m * m FROM nums")
    f.q("SELECT k, n / 2, n // 2, n % 2, n % 3 FROM nums")
    f.q("SELECT k, m / n, m // n, m % n FROM nums")
    f.q("SELECT k, n / 0, x / 0, n // 0, n % 0, m % 0 FROM nums")
    f.q("SELECT k, x + 1, x * 2, x - y, x / y, x * y FROM nums")
    f.q("SELECT k, x % 2, y % 3, x % y FROM nums")
    f.q("SELECT k, -n, -m, -x, - (n + 1) FROM nums")
    f.q("SELECT k, n + x, m + x, n * x, m - y FROM nums")
    f.q("SELECT k, n / y, m / x FROM nums")
    f.q("SELECT k, 2 + n * 3, (2 + n) * 3, n - 1 - 1, n * 2 + m // 3 FROM nums")
    f.q("SELECT k, n > 0, n = 0, x < y, n + 1 > 2, NOT (n > 0) FROM nums")
    f.q("SELECT k, (n + m) * 2 - 1, n * (m - 1) FROM nums")
    f.q("SELECT k AS key, n AS val FROM nums WHERE k <= 5")
    f.q("SELECT nums.k, nums.n FROM nums WHERE nums.k > 20")
    f.q("SELECT t.k, t.x FROM nums t WHERE t.k < 4")
    f.q("SELECT t.k, t.x, t.k FROM nums AS t WHERE t.k > 21")
    f.q("SELECT K, N FROM NUMS WHERE N < -5")
    f.q("select k, n from nums where n > 9")
    f.q("SELECT 1 FROM nums WHERE k < 4")
    f.q("SELECT k, 'const', 2.5, n FROM nums WHERE k IN (1, 2, 3)")

    f.comment("real tables")
    f.q("SELECT ts, sym, price, size, venue, flag FROM trades WHERE ts < '2024-01-02 10:30:00'")
    f.q("SELECT sym, price * size AS notional, price * 2, size + 1, size * 10 FROM trades "
        "WHERE ts < '2024-01-02 10:00:00'")
    f.q("SELECT size / 100, size // 100, size % 100 FROM trades WHERE ts >= '2024-01-04 15:00:00'")
    f.q("SELECT * FROM one_row")
    f.q("SELECT k + 1, x * 2, v, -x FROM one_row")
    f.q("SELECT * FROM empty_t")
    f.q("SELECT a + 1, c * 2, b FROM empty_t")


# --------------------------------------------------------------------------------------
def s02_where(f):
    f.comment("comparisons on every type")
    f.q("SELECT id FROM people WHERE age > 40")
    f.q("SELECT id FROM people WHERE age >= 40 AND age <= 50")
    f.q("SELECT id, age FROM people WHERE age = 30 OR age = 31 OR age = 45")
    f.q("SELECT id, name FROM people WHERE name = 'bob'")
    f.q("SELECT id FROM people WHERE name <> 'bob'")
    f.q("SELECT id, name FROM people WHERE name < 'M'")
    f.q("SELECT id, name FROM people WHERE name >= 'a'")
    f.q("SELECT id, salary FROM people WHERE salary > 150000.0")
    f.q("SELECT id, score FROM people WHERE score >= 50")
    f.q("SELECT id, score FROM people WHERE score < 12.5")
    f.q("SELECT id FROM people WHERE active")
    f.q("SELECT id FROM people WHERE NOT active")
    f.q("SELECT id FROM people WHERE active = false")
    f.q("SELECT id FROM people WHERE active IS NULL")
    f.q("SELECT id, born FROM people WHERE born < '1960-01-01'")
    f.q("SELECT id, born FROM people WHERE born >= '1998-06-01'")
    f.q("SELECT id FROM people WHERE dept = 'eng'")
    f.q("SELECT id, dept FROM people WHERE dept <> 'eng'")
    f.q("SELECT k FROM nums WHERE n < m")
    f.q("SELECT k FROM nums WHERE x = y")
    f.q("SELECT k FROM nums WHERE x / y > 1")
    f.q("SELECT k FROM nums WHERE n % 2 = 0")
    f.q("SELECT k FROM nums WHERE n // 0 IS NULL")

    f.comment("three-valued logic")
    f.q("SELECT id, age > 40 AND active, age > 40 OR active, NOT active FROM people")
    f.q("SELECT id FROM people WHERE age > 40 OR active")
    f.q("SELECT id FROM people WHERE NOT (age > 40)")
    f.q("SELECT id FROM people WHERE NOT (age > 40 AND active)")
    f.q("SELECT id FROM people WHERE NOT (age > 40 OR active)")
    f.q("SELECT id FROM people WHERE (age > 40) IS NULL")
    f.q("SELECT k, b, b AND n > 0, b OR n > 0, NOT b FROM nums")
    f.q("SELECT k FROM nums WHERE NULL")
    f.q("SELECT k FROM nums WHERE true")
    f.q("SELECT k FROM nums WHERE 1 = 0")
    f.q("SELECT k FROM nums WHERE NOT (n = 3) OR n IS NULL")

    f.comment("IS [NOT] NULL, empty string vs NULL")
    f.q("SELECT id FROM people WHERE name IS NULL")
    f.q("SELECT id FROM people WHERE name IS NOT NULL AND age IS NULL")
    f.q("SELECT id FROM people WHERE age IS NOT NULL AND salary IS NULL")
    f.q("SELECT count(*) FROM trades WHERE sym IS NULL")
    f.q("SELECT count(*) FROM trades WHERE venue IS NOT NULL AND flag IS NOT NULL")
    f.q("SELECT id FROM people WHERE name = ''")
    f.q("SELECT ts, venue FROM trades WHERE venue = ''")

    f.comment("BETWEEN")
    f.q("SELECT id, age FROM people WHERE age BETWEEN 30 AND 40")
    f.q("SELECT id FROM people WHERE age NOT BETWEEN 30 AND 60")
    f.q("SELECT id FROM people WHERE age BETWEEN 40 AND 30")
    f.q("SELECT id, name FROM people WHERE name BETWEEN 'a' AND 'm'")
    f.q("SELECT k, x FROM nums WHERE x BETWEEN -1 AND 2.5")
    f.q("SELECT ts, price FROM trades WHERE price BETWEEN 140 AND 141")
    f.q("SELECT k, n BETWEEN 0 AND 5, x NOT BETWEEN 0 AND 5 FROM nums")

    f.comment("IN lists, NOT IN with NULLs")
    f.q("SELECT id, age FROM people WHERE age IN (25, 30, 35, 40)")
    f.q("SELECT id FROM people WHERE dept IN ('eng', 'ops')")
    f.q("SELECT id FROM people WHERE age NOT IN (25, 30, 35, 40)")
    f.q("SELECT id FROM people WHERE age NOT IN (25, NULL)")
    f.q("SELECT id FROM people WHERE age IN (25, NULL)")
    f.q("SELECT k, n IN (1, 2, 3), n NOT IN (1, NULL), n IN (7, NULL) FROM nums")
    f.q("SELECT id, name FROM people WHERE name IN ('bob', 'Bob', '', 'nobody')")
    f.q("SELECT count(*) FROM trades WHERE sym NOT IN ('AAPL', 'MSFT')")
    f.q("SELECT k FROM nums WHERE x IN (2.5, -2.5, 64)")
    # Eight items or more are hashed: every type, NULL among them, NOT IN, and a mixed list.
    f.q("SELECT id, age FROM people WHERE age IN (25, 26, 27, 28, 29, 30, 35, 40, 45, 50)")
    f.q("SELECT id FROM people WHERE age NOT IN (25, 26, 27, 28, 29, 30, 35, 40, 45, 50)")
    f.q("SELECT id FROM people WHERE age NOT IN (25, 26, 27, 28, 29, 30, 35, 40, 45, NULL)")
    f.q("SELECT k, n IN (1, 2, 3, 4, 5, 6, 7, 8, NULL), n NOT IN (0, 1, 2, 3, 4, 5, 6, 7, 8) FROM nums")
    f.q("SELECT k, m IN (-3, -2, -1, 0, 1, 2, 3, 4, 5, 6, 7) FROM nums")
    f.q("SELECT k FROM nums WHERE x IN (2.5, -2.5, 64, 0, -0.0, 1, 1.5, 3, 7.25, 100)")
    f.q("SELECT k FROM nums WHERE x IN (1, 2, 3, 4, 5, 6, 7, 2.5)")
    f.q("SELECT id, name FROM people WHERE name IN ('bob', 'Bob', '', 'nobody', 'alice', 'Alice', 'carol', 'dave', 'eve')")
    f.q("SELECT id FROM people WHERE dept IN ('eng', 'ops', 'sales', 'legal', 'Eng', 'hr', 'x', 'y', NULL)")
    f.q("SELECT count(*) FROM trades WHERE sym NOT IN ('AAPL', 'MSFT', 'A', 'B', 'C', 'D', 'E', 'F')")
    f.q("SELECT count(*) FROM trades WHERE sym IN ('AAPL', 'MSFT', 'A', 'B', 'C', 'D', 'E', 'F') AND size > 100")
    f.q("SELECT id FROM people WHERE born IN (DATE '1990-01-01', DATE '1985-06-15', DATE '1992-03-03', "
        "DATE '1979-12-31', DATE '1988-08-08', DATE '2000-01-01', DATE '1995-05-05', DATE '1970-01-01')")
    f.q("SELECT k, b IN (true, true, true, true, true, true, true, true) FROM nums")
    f.q("SELECT count(*) FROM trades WHERE ts IN (SELECT ts FROM trades WHERE size > 300)")

    f.comment("LIKE / ILIKE (no escape character)")
    f.q("SELECT id, name FROM people WHERE name LIKE 'A%'")
    f.q("SELECT id, name FROM people WHERE name LIKE '%e'")
    f.q("SELECT id, name FROM people WHERE name LIKE '%li%'")
    f.q("SELECT id, name FROM people WHERE name LIKE '_o%'")
    f.q("SELECT id, name FROM people WHERE name LIKE 'user_1'")
    f.q("SELECT id, name FROM people WHERE name LIKE 'user%'")
    f.q("SELECT count(*) FROM people WHERE name LIKE '%'")
    f.q("SELECT id FROM people WHERE name LIKE ''")
    f.q("SELECT id, name FROM people WHERE name LIKE 'Zo_'")
    f.q("SELECT id, name FROM people WHERE name LIKE '%''%'")
    f.q("SELECT id, name FROM people WHERE name ILIKE 'a%'")
    f.q("SELECT id, name FROM people WHERE name ILIKE '%LI%'")
    f.q("SELECT id, name FROM people WHERE name ILIKE 'émile'")
    f.q("SELECT id FROM people WHERE name NOT LIKE '%a%'")
    f.q("SELECT id FROM people WHERE name NOT ILIKE '%a%'")
    f.q("SELECT count(*) FROM trades WHERE sym LIKE 'A%'")
    f.q("SELECT count(*) FROM trades WHERE venue ILIKE 'BATS'")
    f.q("SELECT 'abc' LIKE 'a_c', 'abc' LIKE 'a_', 'a' LIKE '%', '' LIKE '%', '' LIKE '_', 'ABC' ILIKE 'a%c'")

    f.comment("combined predicates")
    f.q("SELECT ts, sym, size FROM trades WHERE (sym = 'AAPL' OR sym = 'MSFT') AND size > 1000 AND NOT flag")
    f.q("SELECT ts, price, size FROM trades WHERE price * size > 1500000")
    f.q("SELECT id FROM people WHERE (dept = 'eng' AND age < 40) OR (dept = 'ops' AND salary > 100000)")
    f.q("SELECT a FROM empty_t WHERE a > 0")


# --------------------------------------------------------------------------------------
def s03_case_cast_coalesce(f):
    f.comment("searched CASE")
    f.q("SELECT k, CASE WHEN n < 0 THEN 'neg' WHEN n = 0 THEN 'zero' WHEN n > 0 THEN 'pos' END FROM nums")
    f.q("SELECT k, CASE WHEN n < 0 THEN 'neg' WHEN n = 0 THEN 'zero' ELSE 'pos or null' END FROM nums")
    f.q("SELECT k, CASE WHEN n > 5 THEN 'big' WHEN n > 0 THEN 'small' ELSE 'other' END FROM nums")
    f.q("SELECT id, CASE WHEN active THEN 'yes' ELSE 'no/unknown' END FROM people")
    f.q("SELECT k, CASE WHEN n > 0 THEN n ELSE x END FROM nums")
    f.q("SELECT k, CASE WHEN n > 0 THEN NULL ELSE n END FROM nums")
    f.q("SELECT k, CASE WHEN b THEN CASE WHEN n > 0 THEN 1 ELSE 2 END ELSE 3 END FROM nums")
    f.q("SELECT k FROM nums WHERE CASE WHEN n > 0 THEN x > 1 ELSE false END")
    f.comment("simple CASE")
    f.q("SELECT id, CASE dept WHEN 'eng' THEN 1 WHEN 'ops' THEN 2 ELSE 0 END FROM people")
    f.q("SELECT id, CASE dept WHEN 'eng' THEN 'E' WHEN 'sales' THEN 'S' END FROM people")
    f.q("SELECT k, CASE n WHEN 7 THEN 'seven' WHEN -7 THEN 'minus seven' WHEN 0 THEN 'zero' ELSE 'other' END FROM nums")
    f.q("SELECT sym, sum(CASE WHEN flag THEN size ELSE 0 END), count(CASE WHEN flag THEN 1 END) FROM trades GROUP BY sym")
    f.q("SELECT CASE WHEN price < 150 THEN 'low' WHEN price < 300 THEN 'mid' ELSE 'high' END AS bucket, count(*) "
        "FROM trades GROUP BY bucket")

    f.comment("CAST: DOUBLE -> integer rounds (DuckDB: half to even)")
    f.q("SELECT k, x, CAST(x AS INT), CAST(x AS BIGINT) FROM nums")
    f.q("SELECT CAST(CAST(2.5 AS DOUBLE) AS INT), CAST(CAST(3.5 AS DOUBLE) AS INT), CAST(CAST(-2.5 AS DOUBLE) AS INT), "
        "CAST(CAST(0.49 AS DOUBLE) AS INT), CAST(CAST(-0.51 AS DOUBLE) AS BIGINT)")
    f.q("SELECT id, score, CAST(score AS INT) FROM people")
    f.q("SELECT ts, price, CAST(price AS INT), CAST(price AS BIGINT) FROM trades WHERE ts < '2024-01-02 11:00:00'")
    f.comment("CAST: integers, strings, booleans")
    f.q("SELECT k, CAST(n AS DOUBLE), CAST(n AS BIGINT) + m, CAST(m AS DOUBLE) / 4 FROM nums")
    f.q("SELECT k, CAST(n AS VARCHAR), CAST(m AS VARCHAR) FROM nums")
    f.q("SELECT k, s, CAST(s AS INT), CAST(s AS BIGINT), CAST(s AS DOUBLE) FROM nums")
    f.q("SELECT k, CAST(s AS INT) + 1, CAST(s AS INT) * n FROM nums")
    f.q("SELECT k FROM nums WHERE CAST(s AS INT) > 10")
    f.q("SELECT CAST('42' AS INT), CAST('-17' AS BIGINT), CAST('2.5' AS DOUBLE), CAST(17 AS VARCHAR), CAST(-3 AS VARCHAR)")
    f.q("SELECT k, b, CAST(b AS INT), CAST(b AS VARCHAR) FROM nums")
    f.q("SELECT k, CAST(n AS BOOLEAN) FROM nums")
    f.q("SELECT CAST('true' AS BOOLEAN), CAST('false' AS BOOLEAN), CAST(1 AS BOOLEAN), CAST(0 AS BOOLEAN)")
    f.q("SELECT id, CAST(age AS VARCHAR) || ' years' FROM people")
    f.q("SELECT id, CAST(id AS DOUBLE) / 4, CAST(id AS REAL) FROM people WHERE id < 10")
    f.q("SELECT CAST(12 AS DOUBLE), CAST(3 AS REAL), CAST(123456789 AS BIGINT) * 100")
    f.comment("CAST: strings to TIMESTAMP / DATE and back")
    f.q("SELECT CAST('2024-01-02 09:30:00' AS TIMESTAMP), CAST('2024-01-02 09:30:00.123456789' AS TIMESTAMP), "
        "CAST('2024-01-02' AS DATE)")
    f.q("SELECT CAST('2024-01-02 09:30:00.5' AS TIMESTAMP), CAST('1970-01-01 00:00:00' AS TIMESTAMP), "
        "CAST('2000-02-29' AS DATE)")
    f.q("SELECT ts, CAST(ts AS DATE) FROM trades WHERE ts < '2024-01-02 10:00:00'")
    f.q("SELECT id, born, CAST(born AS TIMESTAMP) FROM people WHERE id <= 15")
    f.q("SELECT count(*) FROM trades WHERE CAST(ts AS DATE) = CAST('2024-01-03' AS DATE)")

    f.comment("COALESCE")
    f.q("SELECT k, COALESCE(n, 0), COALESCE(n, m, -1), COALESCE(x, y, 0.0) FROM nums")
    f.q("SELECT id, COALESCE(name, 'anon'), COALESCE(dept, 'none') FROM people")
    f.q("SELECT ts, COALESCE(sym, venue, '?') FROM trades WHERE ts < '2024-01-02 11:00:00'")
    f.q("SELECT COALESCE(NULL, NULL, 3), COALESCE(NULL, 'x'), COALESCE(1, NULL)")
    f.q("SELECT id, COALESCE(age, salary) FROM people")
    f.q("SELECT COALESCE(dept, 'none') AS d, count(*) FROM people GROUP BY COALESCE(dept, 'none')")
    f.q("SELECT k FROM nums WHERE COALESCE(b, true)")
    f.q("SELECT id, COALESCE(active, false), COALESCE(born, '1900-01-01') FROM people WHERE id > 45")


# --------------------------------------------------------------------------------------
def s04_strings(f):
    f.q("SELECT id, name, lower(name), upper(name) FROM people")
    f.q("SELECT id, name, length(name) FROM people")
    f.q("SELECT id, substr(name, 1, 3), substr(name, 2), substr(name, 3, 2) FROM people")
    f.q("SELECT id, substr(name, 1, 1), substr(name, length(name), 1) FROM people")
    f.comment("substr is 1-based; start 0 / past the end / zero length")
    f.q("SELECT substr('hello', 1, 2), substr('hello', 2), substr('hello', 5, 10), substr('hello', 2, 0), substr('hello', 10)")
    f.q("SELECT substr('hello', 0), substr('hello', 0, 2)")
    f.comment("negative start counts from the end (DuckDB)")
    f.q("SELECT substr('hello', -3), substr('hello', -3, 2), substr('hello', -1)")
    f.q("SELECT substr('Ωmega', 1, 1), substr('東京太郎', 2, 2), length('東京太郎'), length('Ωmega'), length('')")
    f.q("SELECT upper('ωmega'), lower('ÀÉÎ'), upper('zoë'), lower('ÅNGSTRÖM')")
    f.comment("concat skips NULLs, || propagates them")
    f.q("SELECT id, concat(name, '-', dept), name || '-' || dept FROM people")
    f.q("SELECT id, concat(name, id), concat('#', id, '#') FROM people WHERE id < 20")
    f.q("SELECT concat('a', NULL, 'b'), 'x' || '', concat('a', 'b', 'c', 'd'), 'ab' || 'cd' || 'ef'")
    f.q("SELECT id, concat(name, dept) FROM people WHERE name IS NULL")
    f.q("SELECT ts, concat(sym, '@', venue), sym || '/' || venue FROM trades WHERE ts < '2024-01-02 10:30:00'")
    f.q("SELECT ts, upper(venue), lower(sym), length(venue), length(sym) FROM trades WHERE ts > '2024-01-04 15:00:00'")
    f.comment("string functions in predicates")
    f.q("SELECT id FROM people WHERE lower(name) = 'alice'")
    f.q("SELECT id, name FROM people WHERE upper(name) LIKE 'A%'")
    f.q("SELECT id FROM people WHERE length(name) = 0")
    f.q("SELECT id, name FROM people WHERE length(name) > 5")
    f.q("SELECT id, name FROM people WHERE substr(name, 1, 1) = 'Z'")
    f.q("SELECT id FROM people WHERE name = 'O''Brien'")
    f.q("SELECT id, name FROM people WHERE name LIKE 'back%'")
    f.q("SELECT id, name FROM people WHERE lower(name) LIKE '%ö%' OR lower(name) LIKE '%ü%'")
    f.comment("ordering and comparing strings (byte order)")
    f.q("SELECT id, name FROM people ORDER BY name, id", "nosort")
    f.q("SELECT id, name FROM people ORDER BY name DESC, id", "nosort")
    f.q("SELECT id, name FROM people ORDER BY lower(name), id", "nosort")
    f.q("SELECT 'a' < 'b', 'B' < 'a', 'abc' < 'abd', 'ab' < 'abc', '' < 'a', 'é' > 'z', 'Z' < 'a'")
    f.q("SELECT min(name), max(name), count(DISTINCT lower(name)), count(DISTINCT name) FROM people")
    f.q("SELECT lower(name), count(*) FROM people GROUP BY lower(name) HAVING count(*) > 1")
    f.q("SELECT item, count(*) FROM orders GROUP BY item")
    f.q("SELECT DISTINCT upper(item) FROM orders")
    f.comment("nested")
    f.q("SELECT id, upper(substr(name, 1, 1)) || lower(substr(name, 2)) FROM people")
    f.q("SELECT id, length(concat(name, dept)), length(CAST(id AS VARCHAR)) FROM people")
    f.q("SELECT id, lower(name) || '@example.com' FROM people WHERE dept = 'eng'")
    f.q("SELECT 'it''s' || ' ok', length('it''s'), upper('a\\b')")


# --------------------------------------------------------------------------------------
def s05_math(f):
    f.q("SELECT k, abs(n), abs(m), abs(x) FROM nums")
    f.q("SELECT k, x, round(x), round(x, 1), round(x, 2), round(x, 0), round(x, -1) FROM nums")
    f.comment("round() of a float: half away from zero, computed as round(x * 10^n) / 10^n")
    f.q("SELECT round(CAST(2.5 AS DOUBLE)), round(CAST(-2.5 AS DOUBLE)), round(CAST(0.125 AS DOUBLE), 2), "
        "round(CAST(-0.125 AS DOUBLE), 2), round(CAST(1234.5 AS DOUBLE), -2)")
    f.q("SELECT k, n, round(n), round(n, -1), abs(n) FROM nums")
    f.q("SELECT k, x, floor(x), ceil(x) FROM nums")
    f.q("SELECT k, sqrt(x) FROM nums WHERE x >= 0")
    f.q("SELECT k, sqrt(y), sqrt(abs(x)) FROM nums WHERE y >= 0")
    f.q("SELECT k, ln(x) FROM nums WHERE x > 0")
    f.q("SELECT k, exp(x), exp(n) FROM nums")
    f.q("SELECT k, power(x, 2), power(2, n), power(n, 2), power(n, 3) FROM nums")
    f.q("SELECT k, power(x, 0.5), power(y, -1) FROM nums WHERE x > 0 AND y > 0")
    f.q("SELECT sqrt(16), ln(1), exp(0), power(2, 10), abs(-5), power(2, -2), power(10, 0)")
    f.q("SELECT sqrt(2), ln(10), exp(1), power(9, 0.5), abs(-2.25)")
    f.q("SELECT k, round(sqrt(abs(x)), 3), abs(floor(x)), ceil(abs(x)), ln(exp(x)) FROM nums")
    f.q("SELECT k, exp(ln(abs(x))) FROM nums WHERE x <> 0")
    f.q("SELECT id, score, abs(score), round(score), floor(score), ceil(score) FROM people")
    f.q("SELECT id, salary, round(salary / 12, 2), floor(salary / 1000), sqrt(salary) FROM people")
    f.q("SELECT ts, price, round(price), floor(price), ceil(price), round(price, 1) FROM trades "
        "WHERE ts < '2024-01-02 11:00:00'")
    f.q("SELECT ts, abs(price - 150), power(price, 2), sqrt(size), ln(size) FROM trades WHERE ts > '2024-01-04 15:00:00'")
    f.q("SELECT k FROM nums WHERE abs(n) > 5")
    f.q("SELECT k, x FROM nums WHERE round(x) = 2 OR round(x) = -2")
    f.q("SELECT k, x FROM nums WHERE floor(x) <> ceil(x)")
    f.q("SELECT k, abs(n) * sign_free FROM (SELECT k, n, 2 AS sign_free FROM nums) t")
    f.q("SELECT sym, round(avg(size)), max(abs(price - 200)) FROM trades GROUP BY sym")
    f.q("SELECT abs(a), round(c), sqrt(c), power(c, 2) FROM empty_t")
    f.q("SELECT x, round(x), floor(x), ceil(x), sqrt(x), ln(x), exp(x), abs(-x) FROM one_row")
    f.q("SELECT k, abs(x) + abs(y), floor(x / 2) * 2, ceil(y / 3), round(x * y, 1) FROM nums")
    f.q("SELECT id, round(CAST(age AS DOUBLE) / 7, 3), power(CAST(age AS DOUBLE), 0.5) FROM people WHERE id > 40")


# --------------------------------------------------------------------------------------
VWAP_NOTE = ("vwap(price, size) = sum(price * size) / sum(size); only rows where both are non-NULL "
             "are used here")


def s06_aggregates(f):
    f.q("SELECT count(*), count(sym), count(price), count(size), count(venue), count(flag) FROM trades")
    f.q("SELECT count(DISTINCT sym), count(DISTINCT venue), count(DISTINCT flag), count(DISTINCT size) FROM trades")
    f.q("SELECT sum(size), avg(size), min(size), max(size) FROM trades")
    f.q("SELECT sum(price), avg(price), min(price), max(price) FROM trades")
    f.q("SELECT min(ts), max(ts) FROM trades")
    f.q("SELECT min(sym), max(sym), min(venue), max(venue) FROM trades")
    f.q("SELECT min(flag), max(flag) FROM trades")
    f.q("SELECT min(born), max(born), min(name), max(name), min(dept), max(dept) FROM people")
    f.q("SELECT sum(score), avg(score), min(score), max(score) FROM people")
    f.q("SELECT sum(age), avg(age), sum(salary), avg(salary) FROM people")
    f.q("SELECT sum(n), sum(m), avg(m), sum(x), avg(x), min(x), max(m) FROM nums")
    f.q("SELECT count(*), count(n), count(DISTINCT n), count(DISTINCT n % 3), count(b) FROM nums")
    f.comment("sum of BIGINT is exact past 2^63 and below -2^63 (a HUGEINT, as in DuckDB; PostgreSQL's numeric)")
    big = ("(VALUES (1, 9223372036854775807), (1, 9223372036854775807), (1, 5), (2, -9223372036854775807), "
           "(2, -9223372036854775807), (2, -9223372036854775807), (2, NULL), (3, 9223372036854775807), "
           "(3, -9223372036854775807), (4, NULL)) AS t(g, x)")
    f.q("SELECT g, sum(x), count(x) FROM %s GROUP BY g ORDER BY g" % big)
    f.q("SELECT sum(x), sum(x) + 1, -sum(x) FROM %s WHERE g = 1" % big)
    f.q("SELECT g FROM %s GROUP BY g HAVING sum(x) < -9223372036854775808 ORDER BY g" % big)
    f.q("SELECT sum(s) FROM (SELECT g, sum(x) AS s FROM %s GROUP BY g)" % big)
    f.q("SELECT 18446744073709551614 - 1, -18446744073709551614 * 2")
    f.comment("spread statistics: stddev = stddev_samp, variance = var_samp")
    f.q("SELECT stddev(price), stddev_samp(price), stddev_pop(price), variance(price) FROM trades")
    f.q("SELECT stddev(size), stddev_pop(size), variance(size) FROM trades")
    f.q("SELECT stddev(age), variance(age), stddev_pop(salary) FROM people")
    f.q("SELECT stddev(x), stddev_pop(x), variance(x), stddev(n), variance(n) FROM nums")
    f.q("SELECT var_samp(x), stddev_pop(x), variance(x), var_pop(x) FROM "
        "(VALUES (CAST(0.1 AS DOUBLE)), (CAST(0.1 AS DOUBLE)), (CAST(0.1 AS DOUBLE))) AS t(x)")
    f.comment("count_if(c): the rows where c is true, a sum of c as 0/1 (HUGEINT, NULL without a row)")
    f.q("SELECT count_if(price > 100), countif(size IS NULL), count_if(DISTINCT price > 100) FROM trades")
    f.q("SELECT sym, count_if(price > 150 AND size > 100), count_if(price IS NULL) FROM trades GROUP BY sym")
    f.q("SELECT count_if(x > 2), count_if(n < m) FROM nums")
    f.comment("shape of a distribution: skewness, kurtosis (sample, excess), kurtosis_pop; product, geomean")
    f.q("SELECT skewness(price), kurtosis(price), kurtosis_pop(price), skewness(size), kurtosis(size) FROM trades")
    f.q("SELECT skewness(x), kurtosis(x), kurtosis_pop(x), skewness(n), kurtosis(m), kurtosis_pop(n) FROM nums")
    f.q("SELECT b, skewness(x), kurtosis(x), kurtosis_pop(y), product(n), product(y) FROM nums GROUP BY b ORDER BY b")
    f.q("SELECT product(x), product(n), product(y), product(m) FROM nums")
    f.q("SELECT geomean(score), geometric_mean(salary), skewness(age), kurtosis(salary) FROM people")
    f.q("SELECT skewness(x), kurtosis(x), kurtosis_pop(x), product(x), geomean(x) FROM "
        "(VALUES (1.0), (2.0), (4.0), (10.0), (NULL)) AS t(x)")
    f.q("SELECT skewness(x), kurtosis(x), kurtosis_pop(x) FROM (VALUES (3.0), (3.0), (3.0), (3.0)) AS t(x)")
    f.q("SELECT skewness(x), kurtosis(x), kurtosis_pop(x), product(x) FROM (VALUES (1.0), (2.0), (4.0)) AS t(x)")
    f.q("SELECT skewness(c), kurtosis(c), kurtosis_pop(c), product(a), geomean(c) FROM empty_t")
    f.q("SELECT skewness(x), kurtosis_pop(x), product(x), geomean(x) FROM one_row")
    f.comment("bitwise folds of the non-NULL integers, typed as the input; any_value: a non-NULL value of the group")
    f.q("SELECT bit_and(n), bit_or(n), bit_xor(n), bit_and(m), bit_or(m), bit_xor(m) FROM nums")
    f.q("SELECT b, bit_or(n), bit_xor(m), bit_and(k), any_value(CAST(b AS INT)) FROM nums GROUP BY b ORDER BY b")
    f.q("SELECT bit_and(a), bit_or(a), bit_xor(a), any_value(b) FROM empty_t")
    f.q("SELECT any_value(v), any_value(x), bit_or(k) FROM one_row")
    f.q("SELECT sym, any_value(sym), bit_xor(size) FROM trades GROUP BY sym ORDER BY sym")
    f.q("SELECT k, bit_or(n) OVER (ORDER BY k ROWS BETWEEN 2 PRECEDING AND CURRENT ROW), bit_xor(m) OVER (ORDER BY k), "
        "bit_and(n) OVER (ORDER BY k), any_value(y) OVER (ORDER BY k ROWS BETWEEN 1 PRECEDING AND 1 FOLLOWING), "
        "any_value(n) OVER (ORDER BY k) FROM nums ORDER BY k")
    f.comment("statistics of pairs (y, x), rows where both are non-NULL: covariance, correlation, regression")
    f.q("SELECT covar_pop(price, size), covar_samp(price, size), corr(price, size), regr_slope(price, size), "
        "regr_intercept(price, size), regr_r2(price, size) FROM trades")
    f.q("SELECT sym, corr(price, size), regr_slope(size, price), regr_count(price, size), covar_samp(size, price) "
        "FROM trades GROUP BY sym")
    f.q("SELECT regr_count(x, n), regr_avgy(x, n), regr_avgx(x, n), regr_syy(x, n), regr_sxx(x, n), regr_sxy(x, n), "
        "corr(x, n), covar_pop(n, m) FROM nums")
    f.q("SELECT covar_samp(age, salary), corr(salary, age), regr_slope(salary, age), regr_intercept(salary, age), "
        "regr_r2(score, age) FROM people")
    f.q("SELECT corr(y, x), regr_slope(y, x), regr_intercept(y, x), regr_r2(y, x), covar_samp(y, x) FROM "
        "(VALUES (1, 3), (2, 3), (3, 3)) AS t(y, x)")
    f.q("SELECT corr(y, x), regr_slope(y, x), regr_r2(y, x), covar_samp(y, x), regr_count(y, x) FROM "
        "(VALUES (1, 3), (1, 5), (NULL, 4), (2, NULL)) AS t(y, x)")
    f.q("SELECT corr(y, x), regr_slope(y, x), regr_intercept(y, x), regr_r2(y, x), corr(x, y) FROM "
        "(VALUES (1.5, 0.1), (2.5, 0.1), (4.0, 0.1)) AS t(y, x)")
    f.q("SELECT corr(y, x), regr_r2(y, x), regr_slope(y, x) FROM (VALUES (2.0, 1.0), (4.0, 2.0), (6.0, 3.0)) AS t(y, x)")
    f.comment("median / percentile_cont interpolate; quantile is discrete (DuckDB quantile_disc)")
    f.q("SELECT median(price), median(size) FROM trades")
    f.q("SELECT median(age), median(salary), median(score) FROM people")
    f.q("SELECT median(x), median(n), median(m) FROM nums")
    f.q("SELECT quantile(price, 0.5), quantile(price, 0.25), quantile(price, 0.75), quantile(size, 0), "
        "quantile(size, 1) FROM trades")
    f.q("SELECT quantile(age, 0.5), quantile(salary, 0.125), quantile(score, 0.875), quantile(age, 0.0625) FROM people")
    f.q("SELECT quantile(x, 0.5), quantile(n, 0.25), quantile(m, 0.75) FROM nums")
    f.q("SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY price), percentile_cont(0.25) WITHIN GROUP (ORDER BY price), "
        "percentile_cont(0.75) WITHIN GROUP (ORDER BY size) FROM trades")
    f.q("SELECT percentile_cont(0) WITHIN GROUP (ORDER BY age), percentile_cont(1) WITHIN GROUP (ORDER BY age), "
        "percentile_cont(0.5) WITHIN GROUP (ORDER BY age), percentile_cont(0.125) WITHIN GROUP (ORDER BY salary) FROM people")
    f.q("SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY x), percentile_cont(0.25) WITHIN GROUP (ORDER BY n) FROM nums")
    f.comment("aggregates over empty input: count 0, everything else NULL")
    f.q("SELECT count(*), count(a), count(DISTINCT a), sum(a), avg(c), min(b), max(t), stddev(c), median(c) FROM empty_t")
    f.q("SELECT quantile(c, 0.5), percentile_cont(0.5) WITHIN GROUP (ORDER BY c), variance(a), stddev_pop(c) FROM empty_t")
    f.q("SELECT corr(a, c), covar_pop(c, a), regr_count(a, c), regr_avgx(a, c), count_if(a > 0) FROM empty_t")
    f.q("SELECT count(*), sum(size), avg(price), min(ts), max(sym) FROM trades WHERE price > 100000")
    f.q("SELECT count(price), sum(price), min(price), avg(price), count(*) FROM trades WHERE price IS NULL")
    f.comment("single row: sample statistics are NULL, population ones 0")
    f.q("SELECT count(*), sum(x), avg(x), stddev(x), stddev_pop(x), variance(x), median(x), min(t), max(d) FROM one_row")
    f.comment("expressions of / inside aggregates")
    f.q("SELECT sum(price * size), max(price) - min(price), count(*) * 2, avg(size) / 2, sum(size) // 100 FROM trades")
    f.q("SELECT sum(CASE WHEN flag THEN 1 ELSE 0 END), count(CASE WHEN flag THEN 1 END), sum(CAST(flag AS INT)) FROM trades")
    f.q("SELECT avg(price) FROM trades WHERE sym = 'AAPL'")
    f.q("SELECT sum(amount), avg(qty), count(DISTINCT pid), min(od), max(od), sum(qty * amount) FROM orders")
    f.q("SELECT count(*), count(DISTINCT sym), avg(ask - bid), max(ask_size), min(bid_size), sum(bid_size) FROM quotes")
    f.q("SELECT max(length(name)), min(length(name)), sum(length(name)) FROM people")
    f.q("SELECT count(DISTINCT CAST(ts AS DATE)), count(DISTINCT price) FROM trades")
    f.q("SELECT min(price * 2), max(-size), avg(abs(x)) FROM trades, one_row")
    f.comment(VWAP_NOTE)
    f.q("SELECT vwap(price, size) FROM trades WHERE price IS NOT NULL AND size IS NOT NULL",
        duck="SELECT sum(price * size) / sum(size) FROM trades WHERE price IS NOT NULL AND size IS NOT NULL")


# --------------------------------------------------------------------------------------
def s07_group_by(f):
    f.q("SELECT sym, count(*) FROM trades GROUP BY sym")
    f.q("SELECT sym, count(*), sum(size), avg(price), min(price), max(price) FROM trades GROUP BY sym")
    f.q("SELECT sym, venue, count(*), sum(size) FROM trades GROUP BY sym, venue")
    f.q("SELECT dept, count(*), avg(salary), max(age), min(name) FROM people GROUP BY dept")
    f.q("SELECT dept, active, count(*) FROM people GROUP BY dept, active")
    f.q("SELECT flag, count(*), avg(size) FROM trades GROUP BY flag")
    f.comment("group by expression, alias and ordinal")
    f.q("SELECT age // 10, count(*) FROM people GROUP BY age // 10")
    f.q("SELECT age // 10 AS decade, count(*), avg(salary) FROM people GROUP BY decade")
    f.q("SELECT dept, active, count(*) FROM people GROUP BY 1, 2")
    f.q("SELECT age // 10, count(*) FROM people GROUP BY 1")
    f.q("SELECT CAST(ts AS DATE) AS day, count(*), sum(size), min(price) FROM trades GROUP BY day")
    f.q("SELECT price > 200, count(*) FROM trades GROUP BY 1")
    f.q("SELECT n % 3, count(*), sum(x) FROM nums GROUP BY n % 3")
    f.q("SELECT lower(sym) AS s, count(*) FROM trades GROUP BY lower(sym)")
    f.q("SELECT count(*) FROM trades GROUP BY sym")
    f.q("SELECT venue FROM trades GROUP BY venue")
    f.q("SELECT sym, sum(size) * 2, max(price) - min(price), count(*) + 1 FROM trades GROUP BY sym")
    f.comment("statistics per group")
    f.q("SELECT sym, stddev(price), variance(size), median(price), quantile(size, 0.5), "
        "percentile_cont(0.5) WITHIN GROUP (ORDER BY price) FROM trades GROUP BY sym")
    f.q("SELECT sym, count(DISTINCT venue), count(venue), count(DISTINCT flag) FROM trades GROUP BY sym")
    f.q("SELECT dept, median(age), quantile(salary, 0.75), stddev_pop(score) FROM people GROUP BY dept")
    f.q("SELECT pid, count(*), sum(qty * amount), max(od) FROM orders GROUP BY pid")
    f.q("SELECT item, count(*), count(qty), sum(qty), avg(amount) FROM orders GROUP BY item")
    f.q("SELECT sym, avg(ask - bid), max(ask_size), min(bid_size), count(*) FROM quotes GROUP BY sym")
    f.comment(VWAP_NOTE)
    f.q("SELECT sym, vwap(price, size) FROM trades WHERE price IS NOT NULL AND size IS NOT NULL GROUP BY sym",
        duck="SELECT sym, sum(price * size) / sum(size) FROM trades WHERE price IS NOT NULL AND size IS NOT NULL "
             "GROUP BY sym")
    f.comment("first(x)/last(x) by time order (trades are inserted in ts order); non-NULL x only")
    f.q("SELECT sym, first(price), last(price) FROM trades WHERE price IS NOT NULL GROUP BY sym",
        duck="SELECT sym, arg_min(price, ts), arg_max(price, ts) FROM trades WHERE price IS NOT NULL GROUP BY sym")
    f.comment("HAVING")
    f.q("SELECT sym, count(*) FROM trades GROUP BY sym HAVING count(*) > 55")
    f.q("SELECT sym, sum(size), avg(price) FROM trades GROUP BY sym HAVING sum(size) > 100000 AND avg(price) < 300")
    f.q("SELECT sym FROM trades GROUP BY sym HAVING max(price) > 200")
    f.q("SELECT sym, count(*) FROM trades GROUP BY sym HAVING sym IS NOT NULL")
    f.q("SELECT sym, count(DISTINCT venue) FROM trades GROUP BY sym HAVING count(DISTINCT venue) >= 5")
    f.q("SELECT dept, count(*) FROM people GROUP BY dept HAVING avg(age) > 40 OR count(*) < 5")
    f.q("SELECT sym, count(*) FROM trades GROUP BY sym HAVING count(*) > 1000")
    f.q("SELECT count(*) FROM trades HAVING count(*) > 1000")
    f.q("SELECT count(*) FROM trades HAVING count(*) > 10")
    f.q("SELECT sym, sum(size) FROM trades WHERE flag GROUP BY sym HAVING sum(size) > 10000")
    f.comment("group by with ORDER BY / LIMIT")
    f.q("SELECT sym, count(*) FROM trades GROUP BY sym ORDER BY count(*) DESC, sym LIMIT 3", "nosort")
    f.q("SELECT sym, sum(size) AS vol FROM trades GROUP BY sym ORDER BY vol DESC NULLS LAST, sym", "nosort")
    f.q("SELECT dept, count(*) AS c FROM people GROUP BY dept ORDER BY dept NULLS FIRST", "nosort")
    f.comment("empty input")
    f.q("SELECT a, count(*) FROM empty_t GROUP BY a")
    f.q("SELECT count(*) FROM empty_t GROUP BY a")
    f.q("SELECT count(*), sum(a) FROM empty_t")
    f.q("SELECT sym, sum(size) FROM trades WHERE size > 1000000 GROUP BY sym")


# --------------------------------------------------------------------------------------
def s08_order_limit_distinct(f):
    f.comment("NULLs sort last by default, for ASC and DESC alike")
    f.q("SELECT id, age FROM people ORDER BY age, id", "nosort")
    f.q("SELECT id, age FROM people ORDER BY age DESC, id", "nosort")
    f.q("SELECT id, age FROM people ORDER BY age ASC NULLS FIRST, id", "nosort")
    f.q("SELECT id, age FROM people ORDER BY age DESC NULLS FIRST, id DESC", "nosort")
    f.q("SELECT id, age FROM people ORDER BY age DESC NULLS LAST, id", "nosort")
    f.q("SELECT id, age FROM people ORDER BY age NULLS LAST, id DESC", "nosort")
    f.q("SELECT id, dept, age FROM people ORDER BY dept, age DESC, id", "nosort")
    f.q("SELECT id, active FROM people ORDER BY active, id", "nosort")
    f.q("SELECT id, active FROM people ORDER BY active DESC, id", "nosort")
    f.q("SELECT id, born FROM people ORDER BY born DESC, id", "nosort")
    f.q("SELECT id, score FROM people ORDER BY score, id", "nosort")
    f.q("SELECT k, x FROM nums ORDER BY x, k", "nosort")
    f.q("SELECT k, n FROM nums ORDER BY n * -1 NULLS FIRST, k", "nosort")
    f.q("SELECT k, s FROM nums ORDER BY s, k", "nosort")
    f.comment("ORDER BY expression / alias / ordinal / column not selected")
    f.q("SELECT id FROM people ORDER BY salary * -1, id", "nosort")
    f.q("SELECT id, age * 2 AS dbl FROM people ORDER BY dbl DESC, id", "nosort")
    f.q("SELECT id, name FROM people ORDER BY 2, 1", "nosort")
    f.q("SELECT id, name FROM people ORDER BY 2 DESC, 1", "nosort")
    f.q("SELECT name, id FROM people WHERE dept = 'eng' ORDER BY age, id", "nosort")
    f.q("SELECT id, CASE WHEN active THEN 0 ELSE 1 END AS grp FROM people ORDER BY grp, id DESC", "nosort")
    f.comment("LIMIT / OFFSET (always with a total ORDER BY)")
    f.q("SELECT ts, price FROM trades ORDER BY ts LIMIT 5", "nosort")
    f.q("SELECT ts, price FROM trades ORDER BY ts DESC LIMIT 5", "nosort")
    f.q("SELECT ts, price FROM trades ORDER BY ts LIMIT 5 OFFSET 10", "nosort")
    f.q("SELECT ts, price FROM trades ORDER BY ts LIMIT 0", "nosort")
    f.q("SELECT ts, price FROM trades ORDER BY ts LIMIT 5 OFFSET 1000", "nosort")
    f.q("SELECT k FROM nums ORDER BY k OFFSET 20", "nosort")
    f.q("SELECT k FROM nums ORDER BY k LIMIT 100", "nosort")
    f.q("SELECT ts, sym, price FROM trades ORDER BY price DESC, ts LIMIT 10", "nosort")
    f.q("SELECT ts, sym, size FROM trades ORDER BY size DESC NULLS LAST, ts LIMIT 10", "nosort")
    f.q("SELECT ts, sym FROM trades ORDER BY sym NULLS FIRST, ts LIMIT 15", "nosort")
    f.q("SELECT ts, sym, price FROM trades ORDER BY sym DESC, price ASC, ts LIMIT 20", "nosort")
    f.q("SELECT ts, price FROM trades WHERE sym = 'IBM' ORDER BY ts DESC LIMIT 3 OFFSET 2", "nosort")
    f.q("SELECT count(*) FROM trades LIMIT 1")
    f.q("SELECT a FROM empty_t ORDER BY a LIMIT 3", "nosort")
    f.comment("DISTINCT")
    f.q("SELECT DISTINCT sym FROM trades")
    f.q("SELECT DISTINCT sym, venue FROM trades")
    f.q("SELECT DISTINCT venue FROM trades ORDER BY venue", "nosort")
    f.q("SELECT DISTINCT dept FROM people ORDER BY dept DESC NULLS FIRST", "nosort")
    f.q("SELECT DISTINCT age // 10 FROM people")
    f.q("SELECT DISTINCT flag FROM trades")
    f.q("SELECT DISTINCT lower(name) FROM people")
    f.q("SELECT DISTINCT n % 3 FROM nums")
    f.q("SELECT DISTINCT item FROM orders ORDER BY item NULLS FIRST", "nosort")
    f.q("SELECT count(*) FROM (SELECT DISTINCT sym, venue FROM trades) t")
    f.q("SELECT DISTINCT dept, active FROM people")
    f.q("SELECT DISTINCT sym FROM trades ORDER BY sym LIMIT 3", "nosort")
    f.q("SELECT DISTINCT sym FROM trades WHERE sym IS NOT NULL ORDER BY sym DESC LIMIT 2 OFFSET 1", "nosort")
    f.q("SELECT DISTINCT a, b FROM empty_t")
    f.q("SELECT DISTINCT v, x FROM one_row")
    f.q("SELECT DISTINCT CAST(ts AS DATE) FROM trades")
    f.q("SELECT DISTINCT x > 0, y > 0 FROM nums")


# --------------------------------------------------------------------------------------
def s09_subqueries_cte(f):
    f.comment("CTEs")
    f.q("WITH a AS (SELECT sym, sum(size) AS vol FROM trades GROUP BY sym) SELECT sym, vol FROM a WHERE vol > 30000")
    f.q("WITH a AS (SELECT sym, sum(size) AS vol FROM trades GROUP BY sym), "
        "b AS (SELECT sum(vol) AS total FROM a) SELECT a.sym, a.vol, a.vol / b.total FROM a, b")
    f.q("WITH d AS (SELECT dept, avg(salary) AS avg_sal FROM people GROUP BY dept) "
        "SELECT p.id, p.salary, d.avg_sal FROM people p JOIN d ON p.dept = d.dept WHERE p.salary > d.avg_sal")
    f.q("WITH x AS (SELECT k, n FROM nums WHERE n > 0), y AS (SELECT k, n FROM x WHERE n > 5), "
        "z AS (SELECT count(*) AS c FROM y) SELECT (SELECT count(*) FROM x), c FROM z")
    f.q("WITH big AS (SELECT id, name FROM people WHERE salary > 150000) "
        "SELECT b1.id, b2.id FROM big b1 JOIN big b2 ON b1.id + 1 = b2.id")
    f.q("WITH c AS (SELECT pid, count(*) AS n FROM orders GROUP BY pid) SELECT n, count(*) FROM c GROUP BY n")
    f.q("WITH t AS (SELECT ts, price FROM trades WHERE sym = 'GOOG') SELECT min(price), max(price), count(*) FROM t")
    f.q("WITH e AS (SELECT * FROM empty_t) SELECT count(*), max(a) FROM e")
    f.q("WITH u AS (SELECT sym FROM trades UNION SELECT sym FROM quotes) SELECT sym FROM u WHERE sym IS NOT NULL")
    f.q("with lc as (select lower(name) as l from people) select l, count(*) from lc group by l having count(*) > 1")
    f.comment("subqueries in FROM")
    f.q("SELECT t.sym, t.c FROM (SELECT sym, count(*) AS c FROM trades GROUP BY sym) t WHERE t.c > 50")
    f.q("SELECT max(c), min(c) FROM (SELECT sym, count(*) AS c FROM trades GROUP BY sym) t")
    f.q("SELECT s.d, count(*) FROM (SELECT id, salary // 50000 AS d FROM people) s GROUP BY s.d")
    f.q("SELECT * FROM (SELECT * FROM (SELECT k, n * 2 AS n2 FROM nums) a WHERE n2 > 0) b WHERE b.k > 5")
    f.q("SELECT * FROM (SELECT ts, price FROM trades ORDER BY price DESC, ts LIMIT 5) t ORDER BY ts", "nosort")
    f.q("SELECT p.id, oc.c FROM people p JOIN (SELECT pid, count(*) AS c FROM orders GROUP BY pid) oc ON oc.pid = p.id "
        "WHERE oc.c >= 3")
    f.q("SELECT id, k FROM (SELECT id, salary / 1000 AS k FROM people) s WHERE k > 150")
    f.comment("scalar subqueries")
    f.q("SELECT (SELECT max(price) FROM trades), (SELECT count(*) FROM people)")
    f.q("SELECT id, salary - (SELECT avg(salary) FROM people) FROM people WHERE salary IS NOT NULL")
    f.q("SELECT ts, price FROM trades WHERE price > (SELECT avg(price) FROM trades) AND sym = 'AMZN'")
    f.q("SELECT (SELECT price FROM trades WHERE price > 100000)")
    f.q("SELECT ts, price / (SELECT max(price) FROM trades) FROM trades WHERE ts < '2024-01-02 10:00:00'")
    f.q("SELECT sym, count(*) FROM trades GROUP BY sym HAVING count(*) > (SELECT count(*) FROM trades) / 6")
    f.q("SELECT k, (SELECT v FROM one_row), (SELECT a FROM empty_t) FROM nums WHERE k < 3")
    f.comment("IN / NOT IN (subquery); NOT IN over a set containing NULL is never true")
    f.q("SELECT id FROM people WHERE dept IN (SELECT dept FROM depts WHERE budget > 200000)")
    f.q("SELECT id FROM people WHERE dept NOT IN (SELECT dept FROM depts)")
    f.q("SELECT id, dept FROM people WHERE dept NOT IN (SELECT dept FROM depts WHERE dept IS NOT NULL)")
    f.q("SELECT oid FROM orders WHERE pid IN (SELECT id FROM people WHERE age > 60)")
    f.q("SELECT oid, pid FROM orders WHERE pid NOT IN (SELECT id FROM people)")
    f.q("SELECT id, dept, dept IN (SELECT dept FROM depts) FROM people")
    f.q("SELECT k, n IN (SELECT a FROM empty_t), n NOT IN (SELECT a FROM empty_t) FROM nums")
    f.q("SELECT count(*) FROM trades WHERE sym IN (SELECT sym FROM quotes)")
    f.q("SELECT ts FROM trades WHERE sym IN (SELECT sym FROM quotes GROUP BY sym HAVING count(*) > 52)")
    f.comment("EXISTS")
    f.q("SELECT count(*) FROM people WHERE EXISTS (SELECT 1 FROM empty_t)")
    f.q("SELECT count(*) FROM people WHERE NOT EXISTS (SELECT 1 FROM empty_t)")
    f.q("SELECT id FROM people p WHERE EXISTS (SELECT 1 FROM orders o WHERE o.pid = p.id)")
    f.q("SELECT id FROM people p WHERE NOT EXISTS (SELECT 1 FROM orders o WHERE o.pid = p.id)")
    f.comment("correlated subqueries")
    f.q("SELECT p.id, (SELECT count(*) FROM orders o WHERE o.pid = p.id) FROM people p")
    f.q("SELECT p.id, (SELECT max(amount) FROM orders o WHERE o.pid = p.id) FROM people p WHERE p.id < 30")
    f.q("SELECT t.ts, t.sym, t.price FROM trades t "
        "WHERE t.price > (SELECT avg(t2.price) * 1.005 FROM trades t2 WHERE t2.sym = t.sym)")
    f.q("SELECT d.dept, (SELECT count(*) FROM people p WHERE p.dept = d.dept) FROM depts d")
    f.q("SELECT id FROM people p WHERE salary > (SELECT avg(salary) FROM people p2 WHERE p2.dept = p.dept) AND dept = 'ops'")


# --------------------------------------------------------------------------------------
def s10_set_ops(f):
    f.q("SELECT sym FROM trades UNION SELECT sym FROM quotes")
    f.q("SELECT count(*) FROM (SELECT sym FROM trades UNION ALL SELECT sym FROM quotes) u")
    f.q("SELECT dept FROM people UNION SELECT dept FROM depts")
    f.q("SELECT dept FROM depts UNION ALL SELECT dept FROM depts")
    f.q("SELECT 1, 'a' UNION ALL SELECT 2, 'b' UNION ALL SELECT 1, 'a'")
    f.q("SELECT 1, 'a' UNION SELECT 2, 'b' UNION SELECT 1, 'a'")
    f.q("SELECT 1 UNION SELECT 1 UNION ALL SELECT 1")
    f.q("SELECT 1 UNION ALL SELECT 1 UNION SELECT 1")
    f.q("SELECT sym, price FROM trades WHERE price > 370 UNION ALL SELECT sym, bid FROM quotes WHERE bid > 372 "
        "ORDER BY 2 DESC, 1 LIMIT 5", "nosort")
    f.q("SELECT id FROM people WHERE id < 5 UNION SELECT budget FROM depts")
    f.q("SELECT age FROM people WHERE id < 8 UNION ALL SELECT salary FROM people WHERE id < 8")
    f.q("SELECT a FROM empty_t UNION ALL SELECT k FROM one_row")
    f.q("SELECT a, b FROM empty_t UNION SELECT a, b FROM empty_t")
    f.q("SELECT sym, count(*) FROM (SELECT sym FROM trades UNION ALL SELECT sym FROM quotes) u GROUP BY sym")
    f.q("WITH u AS (SELECT ts, sym FROM trades UNION ALL SELECT ts, sym FROM quotes) "
        "SELECT ts, sym FROM u ORDER BY ts LIMIT 10", "nosort")
    f.q("SELECT CAST(NULL AS INT) UNION SELECT CAST(NULL AS INT)")
    f.q("SELECT item FROM orders UNION SELECT name FROM people WHERE name LIKE 'w%' OR name = ''")
    f.q("SELECT x FROM (SELECT 1 AS x UNION ALL SELECT 2 AS y) t")
    f.q("SELECT k, 'nums' FROM nums WHERE n > 10 UNION ALL SELECT id, 'people' FROM people WHERE age > 65")
    f.q("SELECT ts FROM trades WHERE ts < '2024-01-02 09:40:00' UNION SELECT ts FROM quotes WHERE ts < '2024-01-02 09:40:00'")
    f.q("SELECT name FROM people WHERE dept = 'eng' UNION SELECT name FROM people WHERE age > 50")
    f.q("SELECT count(*) FROM (SELECT dept, active FROM people UNION SELECT dept, active FROM people) u")
    f.q("SELECT u.v, count(*) FROM (SELECT n AS v FROM nums UNION ALL SELECT n FROM nums) u GROUP BY u.v")
    f.q("SELECT max(v), min(v) FROM (SELECT price AS v FROM trades UNION ALL SELECT ask FROM quotes) u")


# --------------------------------------------------------------------------------------
def s11_joins(f):
    f.comment("inner joins")
    f.q("SELECT p.id, p.name, d.budget FROM people p JOIN depts d ON p.dept = d.dept")
    f.q("SELECT p.id, d.dept, d.floor_no FROM people p INNER JOIN depts d ON p.dept = d.dept WHERE p.age > 40")
    f.q("SELECT p.id, d.budget FROM people p, depts d WHERE p.dept = d.dept AND d.budget > 300000")
    f.q("SELECT o.oid, p.name, o.amount FROM orders o JOIN people p ON o.pid = p.id")
    f.q("SELECT * FROM depts a JOIN depts b ON a.dept = b.dept")
    f.q("SELECT * FROM people p JOIN depts d ON p.dept = d.dept WHERE p.id < 12")
    f.comment("outer joins (NULL keys never match)")
    f.q("SELECT p.id, p.dept, d.budget FROM people p LEFT JOIN depts d ON p.dept = d.dept")
    f.q("SELECT p.id, d.budget FROM people p LEFT OUTER JOIN depts d ON p.dept = d.dept WHERE d.dept IS NULL")
    f.q("SELECT p.id, d.dept, d.budget FROM people p RIGHT JOIN depts d ON p.dept = d.dept")
    f.q("SELECT p.id, d.dept FROM people p RIGHT OUTER JOIN depts d ON p.dept = d.dept WHERE p.id IS NULL")
    f.q("SELECT p.id, p.dept, d.dept, d.budget FROM people p FULL JOIN depts d ON p.dept = d.dept")
    f.q("SELECT count(*), count(p.id), count(d.dept) FROM people p FULL OUTER JOIN depts d ON p.dept = d.dept")
    f.q("SELECT o.oid, o.pid, p.id, p.name FROM orders o LEFT JOIN people p ON o.pid = p.id")
    f.q("SELECT o.oid, o.pid FROM orders o LEFT JOIN people p ON o.pid = p.id WHERE p.id IS NULL")
    f.q("SELECT p.id, o.oid FROM orders o RIGHT JOIN people p ON o.pid = p.id WHERE o.oid IS NULL")
    f.q("SELECT count(*), count(o.oid), count(p.id) FROM orders o FULL JOIN people p ON o.pid = p.id")
    f.comment("ON vs WHERE in outer joins")
    f.q("SELECT p.id, d.budget FROM people p LEFT JOIN depts d ON p.dept = d.dept AND d.budget > 300000")
    f.q("SELECT p.id, d.budget FROM people p LEFT JOIN depts d ON p.dept = d.dept WHERE d.budget > 300000")
    f.q("SELECT p.id, p.age, d.dept FROM people p LEFT JOIN depts d ON p.dept = d.dept AND p.age > 40")
    f.comment("cross joins")
    f.q("SELECT d.dept, o.k, o.v FROM depts d CROSS JOIN one_row o")
    f.q("SELECT count(*) FROM people CROSS JOIN depts")
    f.q("SELECT a.dept, b.dept FROM depts a CROSS JOIN depts b")
    f.q("SELECT count(*) FROM people CROSS JOIN empty_t")
    f.comment("non-equi and OR conditions")
    f.q("SELECT p.id, count(d.dept) FROM people p JOIN depts d ON p.age > d.floor_no * 20 GROUP BY p.id")
    f.q("SELECT p.id, d.dept FROM people p JOIN depts d ON p.dept = d.dept OR p.age = d.floor_no * 10")
    f.q("SELECT o.oid, p.id FROM orders o JOIN people p ON o.amount > p.salary / 400 AND o.pid = p.id")
    f.q("SELECT a.k, b.k FROM nums a JOIN nums b ON a.n < b.n AND b.n - a.n = 1")
    f.q("SELECT a.dept, b.dept FROM depts a JOIN depts b ON a.dept <> b.dept AND a.budget > b.budget")
    f.q("SELECT p.id, o.oid FROM people p LEFT JOIN orders o ON o.pid = p.id AND o.qty > 15")
    f.comment("multi-key and range joins")
    f.q("SELECT t.sym, count(*) FROM trades t JOIN quotes q ON t.sym = q.sym "
        "AND date_trunc('minute', t.ts) = date_trunc('minute', q.ts) GROUP BY t.sym")
    f.q("SELECT t.ts, t.sym, q.ts, q.bid FROM trades t JOIN quotes q ON t.sym = q.sym "
        "AND t.ts >= q.ts AND t.ts < q.ts + INTERVAL '1 minute'")
    f.q("SELECT t.sym, count(*) FROM trades t JOIN quotes q ON t.sym = q.sym GROUP BY t.sym")
    f.q("SELECT a.k, b.k FROM nums a JOIN nums b ON a.n = b.n AND a.b = b.b")
    f.q("SELECT o.oid, n.k FROM orders o JOIN nums n ON n.m = o.qty")
    f.comment("self joins")
    f.q("SELECT e.id, e.name, m.id, m.name FROM people e JOIN people m ON e.manager_id = m.id")
    f.q("SELECT e.id, e.manager_id, m.name FROM people e LEFT JOIN people m ON e.manager_id = m.id")
    f.q("SELECT m.id, count(*) FROM people e JOIN people m ON e.manager_id = m.id GROUP BY m.id HAVING count(*) > 1")
    f.comment("three-way joins, joins with aggregates and subqueries")
    f.q("SELECT o.oid, p.name, d.budget FROM orders o JOIN people p ON o.pid = p.id JOIN depts d ON p.dept = d.dept")
    f.q("SELECT d.dept, count(p.id), count(o.oid), sum(o.amount) FROM depts d "
        "LEFT JOIN people p ON p.dept = d.dept LEFT JOIN orders o ON o.pid = p.id GROUP BY d.dept")
    f.q("SELECT p.dept, sum(o.amount), count(*) FROM orders o JOIN people p ON o.pid = p.id GROUP BY p.dept")
    f.q("SELECT p.id, oc.c FROM people p LEFT JOIN (SELECT pid, count(*) AS c FROM orders GROUP BY pid) oc "
        "ON oc.pid = p.id WHERE p.id > 50")
    f.q("SELECT COALESCE(p.dept, d.dept) AS dept, count(p.id), max(d.budget) FROM people p "
        "FULL JOIN depts d ON p.dept = d.dept GROUP BY 1")
    f.q("SELECT p.id, e.a, e.b FROM people p LEFT JOIN empty_t e ON p.id = e.a WHERE p.id < 5")
    f.q("SELECT p.id, e.a FROM people p JOIN empty_t e ON p.id = e.a")
    f.q("SELECT e.a, p.id FROM empty_t e RIGHT JOIN people p ON p.id = e.a WHERE p.id > 57")
    f.q("SELECT * FROM one_row o JOIN nums n ON n.k = o.k")
    f.q("SELECT p.id, o.oid FROM people p JOIN orders o ON p.id = o.pid + 1 WHERE p.id < 10")
    f.q("SELECT t.sym, q.sym, count(*) FROM trades t FULL JOIN (SELECT DISTINCT sym FROM quotes) q ON t.sym = q.sym "
        "GROUP BY t.sym, q.sym")


# --------------------------------------------------------------------------------------
def s12_timestamps(f):
    f.comment("timestamps are nanoseconds; string literals compare with timestamp columns")
    f.q("SELECT ts, price FROM trades WHERE ts < '2024-01-02 09:45:00'")
    f.q("SELECT ts, sym FROM trades WHERE ts >= TIMESTAMP '2024-01-03 12:00:00' AND ts < TIMESTAMP '2024-01-03 12:30:00'")
    f.q("SELECT ts FROM trades WHERE ts BETWEEN '2024-01-04 10:00:00' AND '2024-01-04 10:30:00'")
    f.q("SELECT ts, sym FROM trades WHERE ts = '2024-01-02 09:30:00'")
    f.q("SELECT count(*) FROM trades WHERE ts > '2024-01-04 15:50:00.5'")
    f.q("SELECT ts, price FROM trades ORDER BY ts DESC LIMIT 5", "nosort")
    f.q("SELECT TIMESTAMP '2024-01-02 09:30:00', TIMESTAMP '2024-01-02 09:30:00.123456789', TIMESTAMP '1970-01-01 00:00:00'")
    f.q("SELECT epoch_ns(TIMESTAMP '2024-01-02 09:30:00.000000001'), epoch_ns(TIMESTAMP '1970-01-01 00:00:00'), "
        "epoch_ns(TIMESTAMP '2024-01-02 09:30:00')")
    f.q("SELECT ts, epoch_ns(ts) FROM trades ORDER BY ts LIMIT 10", "nosort")
    f.q("SELECT t, epoch_ns(t), extract(second FROM t), extract(minute FROM t) FROM one_row")
    f.q("SELECT TIMESTAMP '2024-01-02 09:30:00.000000001' > TIMESTAMP '2024-01-02 09:30:00', "
        "TIMESTAMP '2024-01-02 09:30:00' = '2024-01-02 09:30:00.000000000'")
    f.comment("timestamp +/- INTERVAL (quotes have whole-microsecond timestamps)")
    f.q("SELECT TIMESTAMP '2024-01-02 09:30:00' + INTERVAL '1 minute', TIMESTAMP '2024-01-02 09:30:00' - INTERVAL '1 hour', "
        "TIMESTAMP '2024-01-02 09:30:00' + INTERVAL '1 day'", us_ok=True)
    f.q("SELECT TIMESTAMP '2024-01-02 09:30:00' + INTERVAL '500ms', TIMESTAMP '2024-01-02 09:30:00' + INTERVAL '1h', "
        "TIMESTAMP '2024-01-02 09:30:00' - INTERVAL '90 seconds', TIMESTAMP '2024-01-02 09:30:00' + INTERVAL '2 hours'",
        us_ok=True)
    f.q("SELECT ts, ts + INTERVAL '1 minute', ts - INTERVAL '500ms', ts + INTERVAL '1 second' FROM quotes "
        "ORDER BY ts LIMIT 10", "nosort", us_ok=True)
    f.q("SELECT ts, INTERVAL '10 minutes' + ts FROM quotes WHERE sym = 'TSLA' ORDER BY ts LIMIT 5", "nosort", us_ok=True)
    f.q("SELECT ts, sym FROM quotes WHERE ts + INTERVAL '1 hour' < '2024-01-02 10:40:00'")
    f.q("SELECT count(*) FROM quotes WHERE ts - INTERVAL '1 day' >= TIMESTAMP '2024-01-02 09:30:00'")
    f.q("SELECT count(*) FROM trades WHERE ts < TIMESTAMP '2024-01-02 09:30:00' + INTERVAL '1h'")
    f.comment("date_trunc")
    f.q("SELECT ts, date_trunc('second', ts), date_trunc('minute', ts), date_trunc('hour', ts), date_trunc('day', ts) "
        "FROM trades ORDER BY ts LIMIT 10", "nosort", us_ok=True)
    f.q("SELECT date_trunc('minute', ts) AS m, count(*), sum(size) FROM trades GROUP BY m ORDER BY m LIMIT 20",
        "nosort", us_ok=True)
    f.q("SELECT date_trunc('hour', ts) AS h, sym, count(*) FROM trades WHERE sym IN ('AAPL', 'IBM') GROUP BY h, sym",
        us_ok=True)
    f.q("SELECT date_trunc('day', ts) AS d, count(*), min(price), max(price), min(ts), max(ts) FROM trades GROUP BY d",
        us_ok=True)
    f.q("SELECT date_trunc('hour', ts) + INTERVAL '1 hour', count(*) FROM quotes GROUP BY 1", us_ok=True)
    f.q("SELECT count(*) FROM trades WHERE date_trunc('hour', ts) = TIMESTAMP '2024-01-03 13:00:00'")
    f.q("SELECT DISTINCT date_trunc('day', ts) FROM quotes", us_ok=True)
    f.comment("extract / date_part (extract(second) is the integer second)")
    f.q("SELECT ts, extract(hour FROM ts), extract(minute FROM ts), extract(second FROM ts), date_part('minute', ts), "
        "date_part('hour', ts) FROM trades ORDER BY ts LIMIT 12", "nosort")
    f.q("SELECT ts, extract(year FROM ts), extract(month FROM ts), extract(day FROM ts), date_part('day', ts) "
        "FROM trades WHERE ts > '2024-01-04 15:40:00'")
    f.q("SELECT extract(hour FROM ts) AS h, count(*), sum(size) FROM trades GROUP BY h")
    f.q("SELECT date_part('day', ts), count(*) FROM trades GROUP BY 1")
    f.q("SELECT id, born, extract(year FROM born), extract(month FROM born), extract(day FROM born) FROM people")
    f.q("SELECT extract(month FROM od) AS mo, count(*), sum(amount) FROM orders GROUP BY mo")
    f.comment("aggregates and comparisons keep nanoseconds")
    f.q("SELECT sym, min(ts), max(ts), count(*) FROM trades GROUP BY sym")
    f.q("SELECT sym, epoch_ns(max(ts)) - epoch_ns(min(ts)) FROM trades GROUP BY sym")
    f.q("SELECT count(*) FROM trades WHERE ts < (SELECT min(ts) FROM quotes WHERE sym = 'TSLA')")
    f.q("SELECT CAST(ts AS DATE) AS day, count(*) FROM quotes GROUP BY day")
    f.q("SELECT id, born FROM people WHERE born BETWEEN '1980-01-01' AND '1989-12-31'")
    f.q("SELECT oid, od FROM orders WHERE od >= '2024-12-01'")
    f.q("SELECT min(od), max(od), count(DISTINCT od) FROM orders")
    f.q("SELECT t.ts, q.ts FROM trades t JOIN quotes q ON t.ts = q.ts")
    f.q("SELECT count(*) FROM trades t JOIN quotes q ON t.sym = q.sym AND t.ts > q.ts "
        "AND t.ts <= q.ts + INTERVAL '5 seconds'")


# --------------------------------------------------------------------------------------
def s13_ddl_dml(f):
    f.comment("CREATE / INSERT / SELECT round trip over every type")
    f.ok("CREATE TABLE t1 (id INT, name VARCHAR, qty BIGINT, px DOUBLE, f REAL, ok BOOLEAN, ts TIMESTAMP, d DATE, sym SYMBOL)")
    f.q("SELECT count(*) FROM t1")
    f.q("SELECT * FROM t1")
    f.ok("INSERT INTO t1 VALUES (1, 'a', 10, 1.5, 2.5, true, '2024-01-02 09:30:00.123456789', '2024-01-02', 'AAPL'), "
         "(2, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL), "
         "(3, '', -5, -0.25, 0.125, false, '1970-01-01 00:00:00', '1970-01-01', '')")
    f.q("SELECT * FROM t1 ORDER BY id", "nosort")
    f.ok("CREATE TABLE IF NOT EXISTS t1 (x INT)")
    f.q("SELECT id, name, sym FROM t1 ORDER BY id", "nosort")
    f.comment("INSERT with a column list: missing columns are NULL, any column order")
    f.ok("INSERT INTO t1 (id, name) VALUES (4, 'partial')")
    f.ok("INSERT INTO t1 (name, id) VALUES ('swapped', 5)")
    f.ok("INSERT INTO t1 (sym, ts, id, f) VALUES ('MSFT', '2024-01-03 00:00:00.000000001', 6, 0.75)")
    f.q("SELECT * FROM t1 ORDER BY id", "nosort")
    f.q("SELECT sym, count(*) FROM t1 GROUP BY sym")
    f.ok("INSERT INTO t1 (id, qty, px) VALUES (7, 2 + 3, 10 / 4), (8, 100 * 100, -1.0 * 3)")
    f.q("SELECT id, qty, px FROM t1 WHERE id >= 7 ORDER BY id", "nosort")
    f.comment("ALTER TABLE ADD COLUMN: existing rows read NULL")
    f.ok("ALTER TABLE t1 ADD COLUMN extra DOUBLE")
    f.q("SELECT id, extra FROM t1 ORDER BY id", "nosort")
    f.ok("INSERT INTO t1 VALUES (9, 'nine', 9, 9.5, 9.25, true, '2024-01-09 09:09:09', '2024-01-09', 'IBM', 99.5)")
    f.ok("INSERT INTO t1 (id, extra) VALUES (10, -1.5)")
    f.q("SELECT id, name, extra FROM t1 ORDER BY id", "nosort")
    f.ok("ALTER TABLE t1 ADD COLUMN tag SYMBOL")
    f.ok("ALTER TABLE t1 ADD COLUMN seen TIMESTAMP")
    f.ok("INSERT INTO t1 (id, tag, seen) VALUES (11, 'new', '2024-02-01 00:00:00.5')")
    f.q("SELECT id, tag, seen, extra FROM t1 WHERE id > 8 ORDER BY id", "nosort")
    f.q("SELECT count(*), count(tag), count(seen), count(extra), count(name) FROM t1")
    f.comment("limits of the integer types")
    f.ok("CREATE TABLE lim (i INT, b BIGINT, d DOUBLE, r REAL)")
    f.ok("INSERT INTO lim VALUES (2147483647, 9223372036854775807, 1e300, 3.5), "
         "(-2147483648, -9223372036854775807, -1e-300, -0.5), (0, 0, 0.0, 0.0)")
    f.q("SELECT * FROM lim ORDER BY i", "nosort")
    f.q("SELECT i - 1, b - 1, d / 10 FROM lim WHERE i > 0")
    f.q("SELECT CAST(i AS BIGINT) + 1, b // 2 FROM lim ORDER BY i", "nosort")
    f.ok("INSERT INTO lim (d, b) VALUES (5, 7)")
    f.q("SELECT i, b, d FROM lim WHERE b = 7")
    f.comment("INSERT ... SELECT")
    f.ok("CREATE TABLE t2 (id INT, name VARCHAR)")
    f.ok("INSERT INTO t2 SELECT id, name FROM t1 WHERE id < 4")
    f.ok("INSERT INTO t2 (id) SELECT id + 100 FROM t1 WHERE id > 8")
    f.q("SELECT * FROM t2 ORDER BY id", "nosort")
    f.ok("INSERT INTO t2 SELECT * FROM t2")
    f.q("SELECT id, count(*) FROM t2 GROUP BY id")
    f.ok("CREATE TABLE agg (sym SYMBOL, n BIGINT, px DOUBLE)")
    f.ok("INSERT INTO agg SELECT sym, count(*), avg(px) FROM t1 GROUP BY sym")
    f.q("SELECT * FROM agg")
    f.ok("INSERT INTO agg (px, sym) SELECT 1.25, 'lit'")
    f.q("SELECT sym, n, px FROM agg WHERE sym = 'lit'")
    f.comment("type name aliases")
    f.ok("CREATE TABLE aliases (a INTEGER, b TEXT, c STRING, d FLOAT, e REAL, f BOOLEAN, g BIGINT, h DOUBLE)")
    f.ok("INSERT INTO aliases VALUES (1, 'x', 'y', 0.5, 1.25, false, 10000000000, 0.1)")
    f.q("SELECT * FROM aliases")
    f.q("SELECT a + 1, b || c, d + e, g * 2, h * 3 FROM aliases")
    f.comment("DROP TABLE [IF EXISTS], re-create")
    f.ok("DROP TABLE t2")
    f.err("SELECT * FROM t2")
    f.ok("DROP TABLE IF EXISTS t2")
    f.ok("DROP TABLE IF EXISTS never_existed")
    f.ok("CREATE TABLE t2 (x VARCHAR, y SYMBOL)")
    f.q("SELECT count(*) FROM t2")
    f.ok("INSERT INTO t2 VALUES ('a', 's1'), ('b', 's1'), ('c', 's2'), (NULL, NULL), ('', 's2')")
    f.q("SELECT y, count(*), min(x), max(x) FROM t2 GROUP BY y")
    f.ok("CREATE TABLE IF NOT EXISTS t3 (a INT)")
    f.ok("INSERT INTO t3 VALUES (1), (2), (3)")
    f.q("SELECT sum(a) FROM t3")
    f.comment("failed statements leave the table unchanged")
    f.err("INSERT INTO t3 VALUES (1, 2)")
    f.err("CREATE TABLE t3 (b INT)")
    f.err("INSERT INTO t3 (nosuch) VALUES (1)")
    f.q("SELECT count(*), sum(a) FROM t3")
    f.ok("DROP TABLE t3")
    f.ok("CREATE TABLE t3 (a VARCHAR)")
    f.q("SELECT count(*) FROM t3")
    f.comment("a symbol column with many repeats")
    f.ok("CREATE TABLE syms (s SYMBOL, v INT)")
    f.ok("INSERT INTO syms VALUES " + ", ".join("('%s', %d)" % (["aa", "bb", "cc", "aa", "dd"][i % 5], i)
                                                for i in range(40)))
    f.q("SELECT s, count(*), sum(v) FROM syms GROUP BY s")
    f.q("SELECT s, v FROM syms WHERE s = 'bb' ORDER BY v", "nosort")
    f.q("SELECT DISTINCT s FROM syms ORDER BY s", "nosort")
    f.q("SELECT count(*) FROM syms WHERE s > 'bb'")
    f.comment("DELETE and UPDATE (corrections); randomized checks: tests/gen/dml_diff.py")
    f.ok("CREATE TABLE fix (ts TIMESTAMP, sym SYMBOL, px DOUBLE, note VARCHAR)")
    f.ok("INSERT INTO fix VALUES ('2024-01-02 09:30:00', 'A', 10.0, 'ok'), ('2024-01-02 09:30:01', 'A', 1000.0, 'fat finger'), "
         "('2024-01-02 09:30:02', 'B', 20.0, NULL), ('2024-01-02 09:30:03', 'B', 21.0, 'ok')")
    f.ok("DELETE FROM fix WHERE px > 10 * (SELECT min(px) FROM fix)")
    f.q("SELECT * FROM fix ORDER BY ts", "nosort")
    f.comment("a value column changes in place; the partition key and the timestamp move rows")
    f.ok("UPDATE fix SET px = px + 0.5, note = 'adjusted' WHERE sym = 'B'")
    f.ok("UPDATE fix SET sym = 'C', ts = ts - INTERVAL '1 hour' WHERE note IS NULL OR note = 'adjusted' AND px > 21")
    f.q("SELECT * FROM fix ORDER BY ts", "nosort")
    f.q("SELECT sym, count(*) FROM fix WHERE ts < '2024-01-02 09:00:00' GROUP BY sym")
    f.ok("UPDATE fix SET note = NULL, px = NULL WHERE sym = 'A'")
    f.q("SELECT sym, px, note FROM fix ORDER BY sym", "nosort")
    f.err("UPDATE fix SET nope = 1")
    f.err("UPDATE fix SET px = 1, px = 2")
    f.err("UPDATE fix SET px = 'abc'")
    f.err("DELETE FROM nofix")
    f.q("SELECT count(*) FROM fix")
    f.ok("DELETE FROM fix")
    f.q("SELECT count(*) FROM fix")


# --------------------------------------------------------------------------------------
def s14_errors(f):
    f.comment("statements that must fail (DuckDB rejects them too)")
    f.err("SELECT nosuchcol FROM trades")
    f.err("SELECT * FROM nosuchtable")
    f.err("SELECT t.nosuch FROM trades t")
    f.err("SELECT x.price FROM trades t")
    f.err("SELECT nosuchfunc(price) FROM trades")
    f.comment("the one integer quotient out of range: the smallest value // -1 (and % -1, as DuckDB)")
    f.err("SELECT (CAST(-9223372036854775807 AS BIGINT) - 1) // -1")
    f.err("SELECT (CAST(-9223372036854775807 AS BIGINT) - 1) % -1")
    f.err("SELECT (CAST(-2147483647 AS INTEGER) - 1) // CAST(-1 AS INTEGER)")
    f.err("SELECT x // y FROM (SELECT size - size - 9223372036854775807 - 1 AS x, size - size - 1 AS y FROM trades) t")
    f.err("SELECT x // -1 FROM (SELECT size - size - 9223372036854775807 - 1 AS x FROM trades) t")
    f.q("SELECT (CAST(-9223372036854775807 AS BIGINT) - 1) // 1, (CAST(-9223372036854775807 AS BIGINT) - 1) // 2, "
        "(CAST(-9223372036854775807 AS BIGINT) - 1) % 3, CAST(-7 AS BIGINT) // -1")
    f.err("SELECT abs(price, 2) FROM trades")
    f.err("SELECT lower() FROM people")
    f.err("SELECT substr() FROM people")
    f.err("SELEC 1")
    f.err("SELECT FROM WHERE")
    f.err("SELECT 1 +")
    f.err("SELECT * FROM trades WHERE")
    f.err("SELECT 'abc' + 1")
    f.err("SELECT CAST('abc' AS INT)")
    f.err("SELECT sum(name) FROM people")
    # Without GROUP BY the non-aggregate columns are the keys (QuestDB's implicit GROUP BY); with
    # one, a column outside it is still refused.
    f.err("SELECT sym, venue, count(*) FROM trades GROUP BY venue")
    f.err("SELECT price FROM trades GROUP BY sym")
    f.err("SELECT * FROM trades WHERE count(*) > 1")
    f.err("SELECT sym FROM trades JOIN quotes ON trades.sym = quotes.sym")
    f.err("SELECT 1 UNION SELECT 1, 2")
    f.err("SELECT * FROM depts ORDER BY 9")
    f.err("SELECT (SELECT size FROM trades)")
    f.err("INSERT INTO depts VALUES ('x')")
    f.err("INSERT INTO depts VALUES ('x', 1, 2, 3)")
    f.err("INSERT INTO nosuchtable VALUES (1)")
    f.err("INSERT INTO depts (nosuch) VALUES (1)")
    f.err("INSERT INTO depts (budget) VALUES ('not a number')")
    f.err("CREATE TABLE depts (a INT)")
    f.err("CREATE TABLE dup_cols (a INT, a INT)")
    f.err("CREATE TABLE bad_type (a NOSUCHTYPE)")
    f.err("DROP TABLE nosuchtable")
    f.err("ALTER TABLE nosuchtable ADD COLUMN x INT")
    f.err("ALTER TABLE depts ADD COLUMN budget INT")
    f.comment("the failed statements above changed nothing")
    f.q("SELECT count(*), sum(budget) FROM depts")
    f.q("SELECT * FROM depts")


# --------------------------------------------------------------------------------------
def s15_analytics(f):
    f.comment("multi-table queries combining several features")
    f.q("SELECT sym, sum(price * size) AS notional FROM trades WHERE sym IS NOT NULL GROUP BY sym "
        "ORDER BY notional DESC, sym LIMIT 3", "nosort")
    f.q("SELECT d.dept, count(p.id) AS headcount, avg(p.salary), d.budget FROM depts d "
        "LEFT JOIN people p ON p.dept = d.dept GROUP BY d.dept, d.budget ORDER BY d.dept NULLS FIRST", "nosort")
    f.q("SELECT p.id, p.name, p.salary FROM people p JOIN (SELECT dept, avg(salary) AS a FROM people GROUP BY dept) x "
        "ON p.dept = x.dept WHERE p.salary > x.a ORDER BY p.salary DESC, p.id LIMIT 10", "nosort")
    f.q("SELECT extract(hour FROM ts) AS h, sum(CASE WHEN sym = 'AAPL' THEN size ELSE 0 END) AS aapl, "
        "sum(CASE WHEN sym = 'MSFT' THEN size ELSE 0 END) AS msft, count(*) FROM trades GROUP BY h ORDER BY h", "nosort")
    f.q("WITH v AS (SELECT sym, sum(size) AS vol FROM trades GROUP BY sym), "
        "s AS (SELECT sym, avg(ask - bid) AS spread, count(*) AS nq FROM quotes GROUP BY sym) "
        "SELECT v.sym, v.vol, s.spread, s.nq FROM v FULL JOIN s ON v.sym = s.sym")
    f.q("SELECT p.id, p.name, count(o.oid) AS n, sum(o.amount) AS total FROM people p JOIN orders o ON o.pid = p.id "
        "GROUP BY p.id, p.name ORDER BY total DESC NULLS LAST, p.id LIMIT 10", "nosort")
    f.q("SELECT m.id, m.name, count(e.id) AS reports, avg(e.salary) FROM people m LEFT JOIN people e "
        "ON e.manager_id = m.id GROUP BY m.id, m.name HAVING count(e.id) > 0")
    f.q("SELECT t.ts, t.sym, t.price, (SELECT max(q.ts) FROM quotes q WHERE q.sym = t.sym AND q.ts <= t.ts) AS qts "
        "FROM trades t WHERE t.ts < '2024-01-02 12:00:00' AND t.sym IN ('AAPL', 'GOOG')")
    f.q("SELECT CAST(ts AS DATE) AS day, sym, count(*), min(price), max(price), sum(size) FROM trades "
        "WHERE sym IS NOT NULL GROUP BY day, sym ORDER BY day, sym", "nosort")
    f.q("SELECT d1.day, d1.vol, d2.vol FROM (SELECT extract(day FROM ts) AS day, sum(size) AS vol FROM trades GROUP BY 1) d1 "
        "LEFT JOIN (SELECT extract(day FROM ts) AS day, sum(size) AS vol FROM trades GROUP BY 1) d2 ON d2.day = d1.day - 1")
    f.q("SELECT item, count(DISTINCT pid), sum(qty), round(sum(amount), 2) FROM orders WHERE od >= '2024-07-01' "
        "GROUP BY item")
    f.q("SELECT p.dept, p.active, count(*) FROM people p WHERE p.id IN (SELECT pid FROM orders WHERE amount > 250) "
        "GROUP BY p.dept, p.active")
    f.q("SELECT sym, count(*) FROM (SELECT sym, venue FROM trades WHERE flag UNION ALL "
        "SELECT sym, 'quote' FROM quotes WHERE bid_size > 500) u GROUP BY sym")
    f.q("SELECT venue, count(*), sum(size), max(price) - min(price) FROM trades WHERE venue <> '' GROUP BY venue "
        "HAVING count(*) > 20")
    f.q("SELECT t.sym, t.ts, t.price FROM trades t JOIN (SELECT sym, max(price) AS mx FROM trades GROUP BY sym) m "
        "ON t.sym = m.sym AND t.price = m.mx")
    f.q("SELECT p.id, CASE WHEN o.c IS NULL THEN 'none' WHEN o.c < 3 THEN 'few' ELSE 'many' END FROM people p "
        "LEFT JOIN (SELECT pid, count(*) AS c FROM orders GROUP BY pid) o ON o.pid = p.id")
    f.q("SELECT upper(substr(name, 1, 1)) AS initial, count(*), avg(age) FROM people WHERE name <> '' GROUP BY initial")
    f.q("SELECT q.sym, count(*), avg(q.ask - q.bid), sum(q.bid_size * q.ask_size) FROM quotes q "
        "WHERE q.bid IS NOT NULL AND q.ask IS NOT NULL GROUP BY q.sym")
    f.q("WITH f AS (SELECT ts, sym, price FROM trades WHERE price IS NOT NULL AND sym IS NOT NULL), "
        "lo AS (SELECT sym, min(ts) AS t0, max(ts) AS t1 FROM f GROUP BY sym) "
        "SELECT lo.sym, a.price, b.price, b.price - a.price FROM lo JOIN f a ON a.sym = lo.sym AND a.ts = lo.t0 "
        "JOIN f b ON b.sym = lo.sym AND b.ts = lo.t1")
    f.q("SELECT count(*) FROM people p WHERE EXISTS (SELECT 1 FROM people q WHERE q.manager_id = p.id) "
        "AND NOT EXISTS (SELECT 1 FROM orders o WHERE o.pid = p.id)")
    f.q("SELECT k, n, m, x, CASE WHEN y = 0 THEN NULL ELSE x / y END, COALESCE(x / y, -1) FROM nums")
    f.q("SELECT o.od, o.amount, p.name FROM orders o LEFT JOIN people p ON p.id = o.pid "
        "WHERE o.od BETWEEN '2024-03-01' AND '2024-03-31' ORDER BY o.od, o.oid", "nosort")


# --------------------------------------------------------------------------------------
def s17_window(f):
    f.comment("window functions: ranking, offsets, frames (ROWS, RANGE with offsets and INTERVALs),\n"
              "aggregates over windows and over GROUP BY results, QUALIFY, named windows, IGNORE NULLS")
    W = "PARTITION BY sym ORDER BY ts"
    f.q(f"SELECT ts, sym, price, row_number() OVER ({W}), rank() OVER (PARTITION BY sym ORDER BY size), "
        "dense_rank() OVER (PARTITION BY sym ORDER BY size) FROM trades")
    f.q("SELECT k, n, rank() OVER (ORDER BY n), dense_rank() OVER (ORDER BY n DESC), "
        "percent_rank() OVER (ORDER BY n NULLS FIRST), cume_dist() OVER (ORDER BY n) FROM nums")
    f.q("SELECT k, ntile(4) OVER (ORDER BY k), ntile(5) OVER (ORDER BY k DESC), ntile(100) OVER (ORDER BY k) FROM nums")
    f.q(f"SELECT ts, sym, price, lag(price) OVER ({W}), lead(price) OVER ({W}), lag(price, 2, 0.0) OVER ({W}), "
        f"lead(size, 3) OVER ({W}), lag(venue) OVER ({W}) FROM trades")
    f.q("SELECT k, x, lag(x IGNORE NULLS) OVER (ORDER BY k), lead(n, 2 IGNORE NULLS) OVER (ORDER BY k), "
        "lag(s, -1) OVER (ORDER BY k), lag(n, 0) OVER (ORDER BY k) FROM nums")
    f.q(f"SELECT ts, sym, price, first_value(price) OVER ({W}), last_value(price) OVER ({W}), "
        f"nth_value(price, 3) OVER ({W}), first_value(price IGNORE NULLS) OVER ({W} ROWS BETWEEN 2 PRECEDING AND 2 FOLLOWING), "
        f"last_value(price IGNORE NULLS) OVER ({W} ROWS BETWEEN UNBOUNDED PRECEDING AND UNBOUNDED FOLLOWING) FROM trades")
    f.q(f"SELECT ts, sym, size, sum(size) OVER ({W}), avg(size) OVER ({W}), count(size) OVER ({W}), count(*) OVER ({W}), "
        f"min(price) OVER ({W}), max(price) OVER ({W}) FROM trades")
    f.q(f"SELECT ts, sym, sum(size) OVER (PARTITION BY sym), avg(price) OVER (PARTITION BY sym), "
        "count(*) OVER (), max(venue) OVER (PARTITION BY sym), min(ts) OVER (PARTITION BY sym) FROM trades")
    f.q(f"SELECT ts, sym, sum(size) OVER ({W} ROWS BETWEEN 2 PRECEDING AND 1 FOLLOWING), "
        f"avg(price) OVER ({W} ROWS 4 PRECEDING), min(size) OVER ({W} ROWS BETWEEN 3 PRECEDING AND 1 PRECEDING), "
        f"max(price) OVER ({W} ROWS BETWEEN 1 FOLLOWING AND 3 FOLLOWING), "
        f"stddev_samp(price) OVER ({W} ROWS BETWEEN 5 PRECEDING AND CURRENT ROW) FROM trades")
    f.q(f"SELECT ts, sym, count(*) OVER (PARTITION BY sym ORDER BY ts RANGE BETWEEN INTERVAL '10 minutes' PRECEDING AND CURRENT ROW), "
        f"sum(size) OVER (PARTITION BY sym ORDER BY ts RANGE BETWEEN INTERVAL '5 minutes' PRECEDING AND INTERVAL '5 minutes' FOLLOWING), "
        f"avg(price) OVER (ORDER BY ts DESC RANGE BETWEEN INTERVAL '1 hour' PRECEDING AND CURRENT ROW) FROM trades")
    f.q("SELECT k, n, sum(m) OVER (ORDER BY n RANGE BETWEEN 2 PRECEDING AND 1 FOLLOWING), "
        "count(*) OVER (ORDER BY n DESC NULLS FIRST RANGE BETWEEN 3 PRECEDING AND CURRENT ROW), "
        "max(k) OVER (ORDER BY x RANGE BETWEEN 1.5 PRECEDING AND 0.5 FOLLOWING), "
        "min(k) OVER (ORDER BY n RANGE BETWEEN CURRENT ROW AND UNBOUNDED FOLLOWING) FROM nums")
    f.q("SELECT k, n, sum(n) OVER (ORDER BY k ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW), "
        "sum(x) OVER (ORDER BY k ROWS BETWEEN CURRENT ROW AND UNBOUNDED FOLLOWING), "
        "var_pop(x) OVER (ORDER BY k), median(m) OVER (ORDER BY k ROWS BETWEEN 2 PRECEDING AND 2 FOLLOWING), "
        "count(DISTINCT b) OVER (ORDER BY k) FROM nums")
    f.q("SELECT dept, count(*), sum(salary), rank() OVER (ORDER BY sum(salary) DESC), "
        "sum(count(*)) OVER () , round(100.0 * sum(salary) / sum(sum(salary)) OVER (), 6) FROM people GROUP BY dept")
    f.q("SELECT id, name, dept, salary FROM people QUALIFY row_number() OVER (PARTITION BY dept ORDER BY salary DESC NULLS LAST, id) = 1")
    f.q("SELECT k, n, row_number() OVER (ORDER BY k) AS rn FROM nums QUALIFY rn > 20")
    f.q("SELECT k, sum(n) OVER w, avg(x) OVER w, first_value(k) OVER w FROM nums "
        "WINDOW w AS (ORDER BY k ROWS BETWEEN 1 PRECEDING AND 1 FOLLOWING)")
    f.q("SELECT k, sum(n) OVER (w ROWS 2 PRECEDING), count(*) OVER w FROM nums WINDOW w AS (ORDER BY k)")
    f.q(f"SELECT sym, ts, price FROM trades WHERE sym IS NOT NULL "
        f"QUALIFY price > avg(price) OVER (PARTITION BY sym) AND row_number() OVER ({W}) <= 5")
    f.q(f"SELECT ts, sym, price, price - lag(price) OVER ({W}) AS chg, "
        f"sum(size) OVER ({W}) * 1.0 / sum(size) OVER (PARTITION BY sym) AS frac FROM trades ORDER BY ts LIMIT 20", "nosort")
    f.q(f"SELECT row_number() OVER (ORDER BY ts DESC) AS r, ts, sym FROM trades ORDER BY r LIMIT 5", "nosort")
    f.q("SELECT DISTINCT sym, count(*) OVER (PARTITION BY sym) FROM trades")
    f.comment("edge cases: empty input, one row, NULL partition keys, NULL order keys, all-NULL frames")
    f.q("SELECT a, row_number() OVER (ORDER BY a), sum(c) OVER (), lag(b) OVER (ORDER BY t) FROM empty_t")
    f.q("SELECT k, row_number() OVER (), rank() OVER (ORDER BY x), lag(x) OVER (ORDER BY k), lead(x, 1, 9.5) OVER (ORDER BY k), "
        "sum(x) OVER (ORDER BY t ROWS 3 PRECEDING), percent_rank() OVER (ORDER BY k), cume_dist() OVER (ORDER BY k) FROM one_row")
    f.q("SELECT sym, count(*) OVER (PARTITION BY sym), sum(size) OVER (PARTITION BY sym ORDER BY ts) FROM trades WHERE sym IS NULL")
    f.q("SELECT k, n, sum(m) OVER (ORDER BY n NULLS FIRST), count(*) OVER (ORDER BY y DESC), "
        "first_value(k) OVER (ORDER BY n NULLS FIRST, k), max(k) OVER (ORDER BY y RANGE BETWEEN 1 PRECEDING AND 1 FOLLOWING) FROM nums")
    f.q("SELECT k, sum(CASE WHEN k > 100 THEN n END) OVER (ORDER BY k ROWS 2 PRECEDING), "
        "avg(CASE WHEN k > 100 THEN x END) OVER (), min(CASE WHEN k < 0 THEN s END) OVER (ORDER BY k) FROM nums")
    f.comment("kdb-style functions: with OVER, and without it on a table partitioned by sym (the default\n"
              "window is PARTITION BY sym ORDER BY ts); checked through their definitions")
    for zsql, duck in [
        ("mavg(price, 3)", f"avg(price) OVER ({W} ROWS 2 PRECEDING)"),
        ("msum(size, 5)", f"sum(size) OVER ({W} ROWS 4 PRECEDING)"),
        ("mmin(price, 4)", f"min(price) OVER ({W} ROWS 3 PRECEDING)"),
        ("mmax(size, 2)", f"max(size) OVER ({W} ROWS 1 PRECEDING)"),
        ("mdev(price, 5)", f"stddev_pop(price) OVER ({W} ROWS 4 PRECEDING)"),
        ("mcount(price, 3)", f"count(price) OVER ({W} ROWS 2 PRECEDING)"),
        ("deltas(size)", f"CASE WHEN row_number() OVER ({W}) = 1 THEN size ELSE size - lag(size) OVER ({W}) END"),
        ("deltas(price)", f"CASE WHEN row_number() OVER ({W}) = 1 THEN price ELSE price - lag(price) OVER ({W}) END"),
        ("ratios(price)", f"CASE WHEN row_number() OVER ({W}) = 1 THEN price ELSE price / lag(price) OVER ({W}) END"),
        ("lag(price)", f"lag(price) OVER ({W})"),
    ]:
        f.q(f"SELECT ts, sym, price, {zsql} FROM trades", duck=f"SELECT ts, sym, price, {duck} FROM trades")
    f.q(f"SELECT ts, sym, mavg(price, 3) OVER (PARTITION BY venue ORDER BY ts) FROM trades",
        duck=f"SELECT ts, sym, avg(price) OVER (PARTITION BY venue ORDER BY ts ROWS 2 PRECEDING) FROM trades")
    f.q("SELECT k, deltas(m) OVER (ORDER BY k), mavg(n, 2) OVER (ORDER BY k) FROM nums",
        duck="SELECT k, CASE WHEN k = 1 THEN m ELSE m - lag(m) OVER (ORDER BY k) END, "
             "avg(n) OVER (ORDER BY k ROWS 1 PRECEDING) FROM nums")
    f.comment("ema(x, n): alpha = 2/(n+1), seeded with the first value; hand-checked (DuckDB has no ema):\n"
              "1, 3, 5 with alpha 0.5 -> 1, 2, 3.5")
    f.q("SELECT k, ema(v, 0.5) OVER (ORDER BY k) FROM (VALUES (1, 1.0), (2, 3.0), (3, 5.0)) t(k, v)",
        duck="SELECT * FROM (VALUES (1, 1.0::DOUBLE), (2, 2.0::DOUBLE), (3, 3.5::DOUBLE))")
    f.q("SELECT k, ema(v, 3) OVER (PARTITION BY g ORDER BY k) FROM (VALUES (1, 'a', 2.0), (2, 'a', NULL), (3, 'a', 4.0), "
        "(4, 'b', 10.0), (5, 'a', 8.0)) t(k, g, v)",
        duck="SELECT * FROM (VALUES (1, 2.0::DOUBLE), (2, NULL), (3, 3.0::DOUBLE), (4, 10.0::DOUBLE), (5, 5.5::DOUBLE))")
    f.comment("rejected")
    f.err("SELECT k FROM nums WHERE row_number() OVER (ORDER BY k) > 1")
    f.err("SELECT sum(row_number() OVER (ORDER BY k)) FROM nums")
    f.err("SELECT k, sum(n) OVER (ORDER BY k, n RANGE BETWEEN 1 PRECEDING AND CURRENT ROW) FROM nums")
    f.err("SELECT k, sum(n) OVER (ORDER BY k ROWS BETWEEN 1 FOLLOWING AND 1 PRECEDING) FROM nums")
    f.err("SELECT k, sum(n) OVER (ORDER BY k ROWS BETWEEN UNBOUNDED FOLLOWING AND CURRENT ROW) FROM nums")
    f.err("SELECT k, sum(n) OVER w FROM nums")
    f.err("SELECT k, ntile(0) OVER (ORDER BY k) FROM nums")
    f.err("SELECT k, sum(n) OVER (ORDER BY x RANGE BETWEEN INTERVAL 1 SECOND PRECEDING AND CURRENT ROW) FROM nums")
    f.err("SELECT k FROM nums GROUP BY row_number() OVER (ORDER BY k)")
    f.err("SELECT k FROM nums QUALIFY k > 1")


# --------------------------------------------------------------------------------------
def _fill_oracle(width_ns, aggs, where, mode):
    """DuckDB SQL answering `SELECT ts, sym, <aggs> FROM trades WHERE <where> SAMPLE BY .. FILL(mode)`:
    every sym gets every bucket from the first to the last one (FILL per key)."""
    W = width_ns
    names = ["a%d" % i for i in range(len(aggs))]
    agg_sql = ", ".join("%s AS %s" % (a, n) for a, n in zip(aggs, names))
    base = ("WITH a AS (SELECT epoch_ns(ts) // {W} * {W} AS b, sym, {agg_sql} FROM trades WHERE {where} GROUP BY 1, 2), "
            "r AS (SELECT min(b) AS lo, max(b) AS hi FROM a), k AS (SELECT DISTINCT sym FROM a), "
            "g AS (SELECT unnest(range(lo, hi + {W}, {W})) AS b FROM r), "
            "f AS (SELECT g.b, k.sym, {cols} FROM g CROSS JOIN k LEFT JOIN a ON a.b = g.b AND a.sym IS NOT DISTINCT FROM k.sym) "
            ).format(W=W, agg_sql=agg_sql, where=where, cols=", ".join("a." + n for n in names))
    if mode == "null":
        sel = ", ".join(names)
    elif mode == "prev":
        sel = ", ".join("last_value(%s IGNORE NULLS) OVER (PARTITION BY sym ORDER BY b ROWS UNBOUNDED PRECEDING)" % n
                        for n in names)
    elif mode == "linear":
        parts = []
        for n in names:
            pw = "OVER (PARTITION BY sym ORDER BY b ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING)"
            nw = "OVER (PARTITION BY sym ORDER BY b ROWS BETWEEN 1 FOLLOWING AND UNBOUNDED FOLLOWING)"
            pv, nv = "last_value(%s IGNORE NULLS) %s" % (n, pw), "first_value(%s IGNORE NULLS) %s" % (n, nw)
            pb = "last_value(CASE WHEN %s IS NOT NULL THEN b END IGNORE NULLS) %s" % (n, pw)
            nb = "first_value(CASE WHEN %s IS NOT NULL THEN b END IGNORE NULLS) %s" % (n, nw)
            parts.append("CASE WHEN %s IS NOT NULL THEN %s ELSE %s + (%s - %s) * (b - %s) / (%s - %s) END"
                         % (n, n, pv, nv, pv, pb, nb, pb))
        sel = ", ".join(parts)
    else:  # a constant
        sel = ", ".join("coalesce(%s, %s)" % (n, mode) for n in names)
    return base + "SELECT make_timestamp_ns(b) AS ts, sym, %s FROM f" % sel


def s18_sample_latest(f):
    f.comment("SAMPLE BY: buckets of the designated timestamp, the other non-aggregate columns are keys;\n"
              "checked against GROUP BY epoch buckets in DuckDB. FILL modes fill every key over the whole\n"
              "range (per key), checked against a DuckDB query that builds the key x bucket grid.")
    day1 = "ts < '2024-01-03'"
    M = 60 * 10**9
    for width, w_ns in [("1h", 3600 * 10**9), ("30m", 30 * M), ("15m", 15 * M)]:
        f.q("SELECT ts, sym, count(*), avg(price), max(size) FROM trades WHERE %s SAMPLE BY %s" % (day1, width),
            duck="SELECT make_timestamp_ns(epoch_ns(ts) // %d * %d) AS ts, sym, count(*), avg(price), max(size) "
                 "FROM trades WHERE %s GROUP BY 1, 2" % (w_ns, w_ns, day1))
    f.q("SELECT ts, count(*), sum(size), min(price) FROM trades SAMPLE BY 1d",
        duck="SELECT make_timestamp_ns(epoch_ns(ts) // 86400000000000 * 86400000000000), count(*), sum(size), "
             "min(price) FROM trades GROUP BY 1")
    f.q("SELECT ts AS bucket, venue, sym, first(price), last(price) FROM trades WHERE ts < '2024-01-02 12:00:00' SAMPLE BY 1h",
        duck="SELECT make_timestamp_ns(epoch_ns(ts) // 3600000000000 * 3600000000000), venue, sym, "
             "first(price ORDER BY ts), last(price ORDER BY ts) FROM trades WHERE ts < '2024-01-02 12:00:00' GROUP BY 1, 2, 3")
    f.q("SELECT ts, count(*) FROM trades SAMPLE BY 1h FROM '2024-01-02 09:00:00' TO '2024-01-02 13:00:00'",
        duck="SELECT make_timestamp_ns(epoch_ns(ts) // 3600000000000 * 3600000000000), count(*) FROM trades "
             "WHERE ts >= '2024-01-02 09:00:00' AND ts < '2024-01-02 13:00:00' GROUP BY 1")
    f.q("SELECT ts, count(*) FROM trades SAMPLE BY 1h ALIGN TO CALENDAR WITH OFFSET '00:30' ",
        duck="SELECT make_timestamp_ns((epoch_ns(ts) - 1800000000000) // 3600000000000 * 3600000000000 + 1800000000000), "
             "count(*) FROM trades GROUP BY 1")
    f.q("SELECT ts, count(*) FROM trades WHERE ts >= '2024-01-02 10:07:00' SAMPLE BY 1h ALIGN TO FIRST OBSERVATION",
        duck="WITH o AS (SELECT min(epoch_ns(ts)) AS o FROM trades WHERE ts >= '2024-01-02 10:07:00') "
             "SELECT make_timestamp_ns((epoch_ns(ts) - o) // 3600000000000 * 3600000000000 + o), count(*) "
             "FROM trades, o WHERE ts >= '2024-01-02 10:07:00' GROUP BY 1")
    nn = day1 + " AND price IS NOT NULL"
    for mode, zmode in [("null", "NULL"), ("prev", "PREV"), ("linear", "LINEAR"), ("-1", "-1")]:
        for width, w_ns in [("30m", 30 * M), ("1h", 3600 * 10**9)]:
            f.q("SELECT ts, sym, avg(price), max(price) FROM trades WHERE %s SAMPLE BY %s FILL(%s)" % (nn, width, zmode),
                duck=_fill_oracle(w_ns, ["avg(price)", "max(price)"], nn, mode))
    f.q("SELECT ts, sym, count(*) FROM trades WHERE %s SAMPLE BY 1h FILL(0)" % nn,
        duck=_fill_oracle(3600 * 10**9, ["count(*)"], nn, "0"))
    f.comment("per-column modes, and FILL with FROM/TO bounds (hand-checked: one key, 4 hourly buckets)")
    f.q("SELECT ts, sym, avg(price), count(*) FROM trades WHERE %s SAMPLE BY 1h FILL(PREV, 0)" % nn,
        duck=_fill_oracle(3600 * 10**9, ["avg(price)", "count(*)"], nn, "prev").replace(
            "last_value(a1 IGNORE NULLS) OVER (PARTITION BY sym ORDER BY b ROWS UNBOUNDED PRECEDING)", "coalesce(a1, 0)"))
    f.q("SELECT ts, count(*) FROM trades WHERE sym = 'AAPL' SAMPLE BY 1h FROM '2024-01-02 06:00:00' TO '2024-01-02 10:00:00' FILL(0)",
        duck="SELECT * FROM (VALUES (TIMESTAMP_NS '2024-01-02 06:00:00', 0::BIGINT), (TIMESTAMP_NS '2024-01-02 07:00:00', 0), "
             "(TIMESTAMP_NS '2024-01-02 08:00:00', 0), (TIMESTAMP_NS '2024-01-02 09:00:00', "
             "(SELECT count(*) FROM trades WHERE sym = 'AAPL' AND ts < '2024-01-02 10:00:00')))")
    f.err("SELECT ts, sym FROM trades SAMPLE BY 1h", duck="SELECT 1 FROM nonexistent_table")
    f.err("SELECT ts, count(*) FROM trades GROUP BY ts SAMPLE BY 1h", duck="SELECT 1 FROM nonexistent_table")
    f.err("SELECT count(*) FROM people SAMPLE BY 1h", duck="SELECT 1 FROM nonexistent_table")
    f.err("SELECT ts, avg(price), count(*) FROM trades SAMPLE BY 1h FILL(PREV, 0, 1)", duck="SELECT 1 FROM nonexistent_table")
    f.comment("calendar months and years: SAMPLE BY 1M / 3M / 1y, month_bucket(n, ts); DuckDB date_trunc and\n"
              "time_bucket (whose month origin 2000-01 is aligned with ours)")
    import random as _r
    rng = _r.Random(77)
    f.ok("CREATE TABLE monthly (ts TIMESTAMP, sym SYMBOL, v DOUBLE)")
    base = 1672531200  # 2023-01-01
    rows = []
    for i in range(120):
        sec = base + rng.randrange(0, 2 * 365 * 86400) if i % 11 else base + (i // 11) * 86400 * 40
        rows.append("(TIMESTAMP '%s', %s, %s)" % (
            __import__("datetime").datetime.utcfromtimestamp(sec).strftime("%Y-%m-%d %H:%M:%S"),
            "NULL" if i % 17 == 5 else "'%s'" % rng.choice(["x", "y", "z"]), round(rng.uniform(1, 100), 2)))
    f.ok("INSERT INTO monthly VALUES " + ", ".join(rows))
    M1 = "make_timestamp_ns(epoch_ns(date_trunc('month', ts)))"
    M3 = "make_timestamp_ns(epoch_ns(time_bucket(INTERVAL '3 months', ts::TIMESTAMP)))"
    Y1 = "make_timestamp_ns(epoch_ns(date_trunc('year', ts)))"
    f.q("SELECT ts, sym, count(*), sum(v) FROM monthly SAMPLE BY 1M",
        duck="SELECT %s, sym, count(*), sum(v) FROM monthly GROUP BY 1, 2" % M1)
    f.q("SELECT ts, count(*), max(v) FROM monthly SAMPLE BY 3M", duck="SELECT %s, count(*), max(v) FROM monthly GROUP BY 1" % M3)
    f.q("SELECT ts, count(*), min(v) FROM monthly SAMPLE BY 1y", duck="SELECT %s, count(*), min(v) FROM monthly GROUP BY 1" % Y1)
    f.q("SELECT month_bucket(3, ts) AS q, count(*) FROM monthly GROUP BY q",
        duck="SELECT %s, count(*) FROM monthly GROUP BY 1" % M3)
    f.q("SELECT ts, sym, count(*) FROM monthly WHERE sym IS NOT NULL SAMPLE BY 1M FILL(0)",
        duck="WITH g AS (SELECT unnest(range(TIMESTAMP '2023-01-01', TIMESTAMP '2025-01-01', INTERVAL 1 MONTH)) AS m), "
             "k AS (SELECT DISTINCT sym FROM monthly WHERE sym IS NOT NULL), "
             "a AS (SELECT date_trunc('month', ts) AS m, sym, count(*) AS c FROM monthly WHERE sym IS NOT NULL GROUP BY 1, 2), "
             "r AS (SELECT min(m) AS lo, max(m) AS hi FROM a) "
             "SELECT make_timestamp_ns(epoch_ns(g.m)), k.sym, coalesce(a.c, 0) FROM g CROSS JOIN k CROSS JOIN r "
             "LEFT JOIN a ON a.m = g.m AND a.sym = k.sym WHERE g.m BETWEEN r.lo AND r.hi")
    f.comment("twap(x [, ts]): each value weighted by the time until the next one (DuckDB via lead())")
    tw = ("SELECT {k}CASE WHEN max(e) > min(e) THEN sum(price * (nxt - e)) / (max(e) - min(e)) ELSE avg(price) END "
          "FROM (SELECT sym, venue, price, epoch_ns(ts) AS e, lead(epoch_ns(ts)) OVER (PARTITION BY {p} ORDER BY ts) AS nxt "
          "FROM trades WHERE price IS NOT NULL{w}) x {g}")
    f.q("SELECT sym, twap(price), twap(price, ts) FROM trades GROUP BY sym",
        duck=tw.format(k="sym, ", p="sym", w="", g="GROUP BY sym").replace(
            " END FROM", " END, CASE WHEN max(e) > min(e) THEN sum(price * (nxt - e)) / (max(e) - min(e)) ELSE avg(price) END FROM"))
    f.q("SELECT twap(price) FROM trades WHERE ts < '2024-01-03'",
        duck=tw.format(k="", p="1", w=" AND ts < '2024-01-03'", g=""))
    f.q("SELECT venue, twap(price) FROM trades WHERE sym = 'AAPL' GROUP BY venue",
        duck=tw.format(k="venue, ", p="venue", w=" AND sym = 'AAPL'", g="GROUP BY venue"))
    f.comment("LATEST ON ts PARTITION BY keys: the last row of each key (from partition tails when the key\n"
              "is the partition key); checked against QUALIFY row_number() in DuckDB")
    last = "QUALIFY row_number() OVER (PARTITION BY %s ORDER BY ts DESC) = 1"
    f.q("SELECT * FROM trades LATEST ON ts PARTITION BY sym", duck="SELECT * FROM trades " + last % "sym")
    f.q("SELECT ts, sym, price FROM trades WHERE price > 150 LATEST ON ts PARTITION BY sym",
        duck="SELECT ts, sym, price FROM trades WHERE price > 150 " + last % "sym")
    f.q("SELECT ts, sym, venue, size FROM trades LATEST BY sym, venue",
        duck="SELECT ts, sym, venue, size FROM trades " + last % "sym, venue")
    f.q("SELECT sym, price FROM trades WHERE ts < '2024-01-03' LATEST ON ts PARTITION BY sym",
        duck="SELECT sym, price FROM trades WHERE ts < '2024-01-03' " + last % "sym")
    f.q("SELECT venue, count(*) FROM trades LATEST ON ts PARTITION BY sym GROUP BY venue",
        duck="SELECT venue, count(*) FROM (SELECT * FROM trades " + last % "sym" + ") GROUP BY venue")
    f.q("SELECT ts, sym FROM trades WHERE sym = 'NONE' LATEST ON ts PARTITION BY sym",
        duck="SELECT ts, sym FROM trades WHERE sym = 'NONE'")
    f.comment("The newest (or oldest) time buckets of a GROUP BY with a LIMIT run from that end of the\n"
              "table, widening the window until the limit is met. NULL times make a NULL bucket, which\n"
              "leads only under NULLS FIRST; a filter dropping the newest rows makes the window widen;\n"
              "the empty minutes between rows make it widen too.")
    f.ok("CREATE TABLE bt (ts TIMESTAMP, sym SYMBOL, v BIGINT)")
    f.ok("INSERT INTO bt VALUES ('2024-01-01 00:00:05', 'a', 1), ('2024-01-01 00:00:59', 'b', 2), "
         "('2024-01-01 00:03:00', 'a', 3), ('2024-01-01 00:03:30', 'b', 4), ('2024-01-01 00:10:00', 'a', 5), "
         "(NULL, 'a', 6), (NULL, 'b', 7), ('2024-01-01 00:10:00.5', 'b', 8), ('2024-01-01 00:11:00', 'c', 9)")
    m = "time_bucket(INTERVAL '1 minute', ts)"
    # DuckDB's time_bucket and date_trunc give microseconds: back to nanoseconds for the answer.
    dm = "make_timestamp_ns(epoch_ns(time_bucket(INTERVAL '1 minute', ts::TIMESTAMP)))"
    for sql in ["SELECT %s AS m, sum(v) AS s, count(*) AS n FROM bt GROUP BY m ORDER BY m DESC LIMIT 3",
                "SELECT %s AS m, sum(v) AS s, count(*) AS n FROM bt GROUP BY m ORDER BY m DESC NULLS FIRST LIMIT 2",
                "SELECT %s AS m, sum(v) AS s FROM bt WHERE v < 5 GROUP BY m ORDER BY m DESC LIMIT 2",
                "SELECT %s AS m, sum(v) AS s FROM bt GROUP BY m ORDER BY m LIMIT 2",
                "SELECT %s AS m, sum(v) AS s FROM bt GROUP BY m ORDER BY m NULLS FIRST LIMIT 2"]:
        f.q(sql % m, "nosort", duck=sql % dm)
    h = "SELECT %s AS h, count(*) AS n FROM bt WHERE ts >= '2024-01-01' GROUP BY h ORDER BY h DESC LIMIT 5"
    f.q(h % "date_trunc('hour', ts)", "nosort", duck=h % "make_timestamp_ns(epoch_ns(date_trunc('hour', ts)))")


# --------------------------------------------------------------------------------------
ASOF_SEL = "SELECT t.id, t.ts, t.sym, t.px, q.ts, q.bid"


def s16_asof(f):
    f.comment("ASOF JOIN: each left row meets the right row with equal keys that is nearest on the\n"
              "right side of the inequality (t.ts >= q.ts: the latest at or before, >: strictly before,\n"
              "<=: the earliest at or after, <: strictly after). ASOF JOIN drops unmatched left rows,\n"
              "ASOF LEFT JOIN keeps them with NULLs. NULL keys and NULL times never match.\n"
              "Right-side times are unique, so every match is unambiguous; qa is inserted in\n"
              "shuffled time order.")
    f.comment("one equality key, each inequality, inner and LEFT")
    for op in (">=", ">", "<=", "<"):
        f.q("%s FROM ta t ASOF JOIN qa q ON t.sym = q.sym AND t.ts %s q.ts" % (ASOF_SEL, op))
    for op in (">=", ">", "<=", "<"):
        f.q("%s FROM ta t ASOF LEFT JOIN qa q ON t.sym = q.sym AND t.ts %s q.ts" % (ASOF_SEL, op))
    f.comment("equal times: >= and <= match the quote at the same nanosecond, > and < do not;\n"
              "ids 2, 3, 4 are at, 1 ns after and 1 ns before a quote")
    f.q("SELECT t.id, q.ts, q.bid FROM ta t ASOF LEFT JOIN qa q ON t.sym = q.sym AND t.ts >= q.ts "
        "WHERE t.id IN (2, 3, 4, 5, 8) ORDER BY t.id", "nosort")
    f.q("SELECT t.id, q.ts, q.bid FROM ta t ASOF LEFT JOIN qa q ON t.sym = q.sym AND t.ts > q.ts "
        "WHERE t.id IN (2, 3, 4, 5, 8) ORDER BY t.id", "nosort")
    f.q("SELECT t.id, q.ts, q.bid FROM ta t ASOF LEFT JOIN qa q ON t.sym = q.sym AND t.ts <= q.ts "
        "WHERE t.id IN (2, 3, 4, 5, 8) ORDER BY t.id", "nosort")
    f.q("SELECT t.id, q.ts, q.bid FROM ta t ASOF LEFT JOIN qa q ON t.sym = q.sym AND t.ts < q.ts "
        "WHERE t.id IN (2, 3, 4, 5, 8) ORDER BY t.id", "nosort")

    f.comment("the inequality written with the sides swapped means the same")
    f.q("%s FROM ta t ASOF LEFT JOIN qa q ON q.sym = t.sym AND q.ts <= t.ts" % ASOF_SEL)
    f.q("%s FROM ta t ASOF JOIN qa q ON t.sym = q.sym AND q.ts > t.ts" % ASOF_SEL)
    f.q("%s FROM ta t ASOF LEFT JOIN qa q ON q.ts >= t.ts AND t.sym = q.sym" % ASOF_SEL)
    f.q("%s FROM ta t ASOF JOIN qa q ON q.ts < t.ts" % ASOF_SEL)

    f.comment("no equality key: the nearest right row overall (NULL-symbol quotes included)")
    f.q("%s FROM ta t ASOF JOIN qa q ON t.ts >= q.ts" % ASOF_SEL)
    f.q("%s, q.sym FROM ta t ASOF LEFT JOIN qa q ON t.ts > q.ts" % ASOF_SEL)
    f.q("%s, q.sym FROM ta t ASOF LEFT JOIN qa q ON t.ts <= q.ts" % ASOF_SEL)
    f.q("%s FROM ta t ASOF JOIN qa q ON t.ts < q.ts" % ASOF_SEL)

    f.comment("two equality keys (symbol and an INT venue); a NULL venue never matches")
    f.q("SELECT t.id, t.sym, t.venue, q.ts, q.venue, q.bid FROM ta t ASOF LEFT JOIN qa q "
        "ON t.sym = q.sym AND t.venue = q.venue AND t.ts >= q.ts")
    f.q("SELECT t.id, t.sym, t.venue, q.ts, q.venue, q.bid FROM ta t ASOF JOIN qa q "
        "ON t.sym = q.sym AND t.venue = q.venue AND t.ts > q.ts")
    f.q("SELECT t.id, t.sym, t.venue, q.ts, q.venue, q.bid FROM ta t ASOF LEFT JOIN qa q "
        "ON t.sym = q.sym AND t.venue = q.venue AND t.ts <= q.ts")
    f.q("SELECT t.id, t.sym, t.venue, q.ts, q.venue, q.bid FROM ta t ASOF LEFT JOIN qa q "
        "ON t.sym = q.sym AND t.venue = q.venue AND t.ts < q.ts")
    f.q("SELECT t.id, q.ts, q.bid FROM ta t ASOF JOIN qa q ON t.venue = q.venue AND t.sym = q.sym AND q.ts <= t.ts")
    f.q("SELECT t.id, q.ts, q.sym, q.bid FROM ta t ASOF LEFT JOIN qa q ON t.venue = q.venue AND t.ts >= q.ts")

    f.comment("BIGINT and DOUBLE time columns")
    f.q("SELECT t.id, t.n, q.n, q.bid FROM ta t ASOF LEFT JOIN qa q ON t.sym = q.sym AND t.n >= q.n")
    f.q("SELECT t.id, t.n, q.n, q.bid FROM ta t ASOF JOIN qa q ON t.sym = q.sym AND t.n > q.n")
    f.q("SELECT t.id, t.n, q.n, q.sym FROM ta t ASOF LEFT JOIN qa q ON t.n <= q.n")
    f.q("SELECT t.id, t.x, q.x, q.bid FROM ta t ASOF LEFT JOIN qa q ON t.sym = q.sym AND t.x >= q.x")
    f.q("SELECT t.id, t.x, q.x, q.bid FROM ta t ASOF JOIN qa q ON t.sym = q.sym AND t.venue = q.venue AND t.x < q.x")
    f.q("SELECT t.id, t.x, q.x, q.sym FROM ta t ASOF JOIN qa q ON q.x <= t.x")

    f.comment("select lists: t.*, q.*, SELECT * (left columns, then right columns), expressions")
    f.q("SELECT t.*, q.* FROM ta t ASOF LEFT JOIN qa q ON t.sym = q.sym AND t.ts >= q.ts")
    f.q("SELECT * FROM ta t ASOF JOIN qa q ON t.sym = q.sym AND t.venue = q.venue AND t.ts <= q.ts")
    f.q("SELECT q.*, t.id FROM ta t ASOF JOIN qa q ON t.sym = q.sym AND t.ts > q.ts")
    f.q("SELECT t.*, q.bid, q.ask FROM ta t ASOF LEFT JOIN qa q ON t.ts >= q.ts")
    f.q("SELECT t.id, t.px - q.bid, q.ask - q.bid, (q.bid + q.ask) / 2, t.px * t.qty FROM ta t "
        "ASOF LEFT JOIN qa q ON t.sym = q.sym AND t.ts >= q.ts")
    f.q("SELECT t.id, epoch_ns(t.ts) - epoch_ns(q.ts) AS lag_ns FROM ta t ASOF JOIN qa q ON t.sym = q.sym AND t.ts >= q.ts")
    f.q("SELECT t.id, t.n - q.n, q.x - t.x FROM ta t ASOF JOIN qa q ON t.sym = q.sym AND t.ts < q.ts")
    f.q("SELECT t.id, CASE WHEN q.ts IS NULL THEN 'no quote' WHEN q.bid IS NULL THEN 'no bid' "
        "WHEN t.px >= q.ask THEN 'at ask' WHEN t.px <= q.bid THEN 'at bid' ELSE 'inside' END "
        "FROM ta t ASOF LEFT JOIN qa q ON t.sym = q.sym AND t.ts >= q.ts")
    f.q("SELECT t.id, COALESCE(q.bid, q.ask, -1.0), COALESCE(q.sym, 'none') FROM ta t "
        "ASOF LEFT JOIN qa q ON t.sym = q.sym AND t.ts >= q.ts")

    f.comment("WHERE on the joined result: the ON condition decides the match, WHERE filters after it")
    f.q("SELECT t.id, q.ts, q.bid FROM ta t ASOF LEFT JOIN qa q ON t.sym = q.sym AND t.ts >= q.ts WHERE q.bid IS NULL")
    f.q("SELECT t.id, t.sym FROM ta t ASOF LEFT JOIN qa q ON t.sym = q.sym AND t.ts >= q.ts WHERE q.ts IS NULL")
    f.q("SELECT t.id, t.px, q.bid FROM ta t ASOF JOIN qa q ON t.sym = q.sym AND t.ts >= q.ts WHERE t.px > q.bid")
    f.q("SELECT t.id, q.bid, q.ask FROM ta t ASOF JOIN qa q ON t.sym = q.sym AND t.ts <= q.ts "
        "WHERE t.sym = 'AAPL' AND t.qty >= 100 ORDER BY t.id", "nosort")

    f.comment("ORDER BY / LIMIT over an ASOF join")
    f.q("SELECT t.id, t.sym, q.ts, q.bid FROM ta t ASOF LEFT JOIN qa q ON t.sym = q.sym AND t.ts >= q.ts ORDER BY t.id",
        "nosort")
    f.q("SELECT t.id, q.bid FROM ta t ASOF JOIN qa q ON t.sym = q.sym AND t.ts >= q.ts ORDER BY t.ts DESC, t.id LIMIT 5",
        "nosort")
    f.q("SELECT t.id, q.bid FROM ta t ASOF LEFT JOIN qa q ON t.ts < q.ts ORDER BY q.bid NULLS FIRST, t.id LIMIT 8",
        "nosort")

    f.comment("aggregates over an ASOF join")
    f.q("SELECT t.sym, count(*), count(q.bid), avg(t.px - q.bid) FROM ta t ASOF LEFT JOIN qa q "
        "ON t.sym = q.sym AND t.ts >= q.ts GROUP BY t.sym")
    f.q("SELECT count(*), count(q.ts), sum(q.bid), min(q.ts), max(q.ts) FROM ta t ASOF JOIN qa q "
        "ON t.sym = q.sym AND t.ts >= q.ts")
    f.comment("several left rows meet the same right row")
    f.q("SELECT q.ts, q.sym, count(*), sum(t.qty) FROM ta t ASOF JOIN qa q ON t.sym = q.sym AND t.ts >= q.ts "
        "GROUP BY q.ts, q.sym HAVING count(*) > 1")
    f.q("SELECT q.sym, count(DISTINCT q.ts), count(*) FROM ta t ASOF JOIN qa q ON t.ts >= q.ts GROUP BY q.sym")
    f.q("SELECT t.venue, max(t.px - q.bid), min(t.px - q.ask) FROM ta t ASOF JOIN qa q "
        "ON t.sym = q.sym AND t.venue = q.venue AND t.ts >= q.ts GROUP BY t.venue")
    f.q("SELECT sym, max(lag_ns), min(lag_ns), count(*) FROM (SELECT t.sym, epoch_ns(q.ts) - epoch_ns(t.ts) AS lag_ns "
        "FROM ta t ASOF JOIN qa q ON t.sym = q.sym AND t.ts <= q.ts) s GROUP BY sym")
    f.q("SELECT sum(t.qty * q.bid) / sum(t.qty) FROM ta t ASOF JOIN qa q ON t.sym = q.sym AND t.ts >= q.ts "
        "WHERE q.bid IS NOT NULL")

    f.comment("ASOF joins of CTEs and FROM-subqueries")
    f.q("WITH qb AS (SELECT * FROM qa WHERE bid IS NOT NULL) SELECT t.id, q.ts, q.bid FROM ta t "
        "ASOF LEFT JOIN qb q ON t.sym = q.sym AND t.ts >= q.ts")
    f.q("SELECT t.id, q.ts, q.bid FROM (SELECT * FROM ta WHERE venue = 1) t ASOF JOIN qa q ON t.sym = q.sym AND t.ts > q.ts")
    f.q("SELECT t.id, q.qts, q.qbid FROM ta t ASOF JOIN (SELECT ts AS qts, sym AS qsym, bid AS qbid FROM qa "
        "WHERE sym <> 'MSFT') q ON t.sym = q.qsym AND t.ts >= q.qts")
    f.q("WITH j AS (SELECT t.sym AS sym, t.px - q.bid AS edge FROM ta t ASOF JOIN qa q ON t.sym = q.sym AND t.ts >= q.ts) "
        "SELECT sym, count(*), count(edge), max(edge) FROM j GROUP BY sym")
    f.q("SELECT s.id, s.bid FROM (SELECT t.id AS id, q.bid AS bid FROM ta t ASOF LEFT JOIN qa q "
        "ON t.sym = q.sym AND t.ts < q.ts) s WHERE s.bid > 100 ORDER BY s.id", "nosort")

    f.comment("a self ASOF join: the previous and the next quote of each quote")
    f.q("SELECT a.ts, a.sym, a.bid, b.ts, b.bid FROM qa a ASOF LEFT JOIN qa b ON a.sym = b.sym AND a.ts > b.ts")
    f.q("SELECT a.ts, a.sym, b.ts FROM qa a ASOF JOIN qa b ON a.sym = b.sym AND a.ts < b.ts")
    f.comment("two ASOF joins in a row: the quote before and the quote after each trade")
    f.q("SELECT t.id, p.ts, p.bid, n.ts, n.bid FROM ta t ASOF LEFT JOIN qa p ON t.sym = p.sym AND t.ts > p.ts "
        "ASOF LEFT JOIN qa n ON t.sym = n.sym AND t.ts < n.ts")

    f.comment("LEFT ASOF JOIN and ASOF LEFT OUTER JOIN are spellings of ASOF LEFT JOIN "
              "(DuckDB only accepts the latter two)")
    f.q("SELECT t.id, q.ts, q.bid FROM ta t LEFT ASOF JOIN qa q ON t.sym = q.sym AND t.ts >= q.ts",
        duck="SELECT t.id, q.ts, q.bid FROM ta t ASOF LEFT JOIN qa q ON t.sym = q.sym AND t.ts >= q.ts")
    f.q("SELECT t.id, q.n FROM ta t LEFT ASOF JOIN qa q ON t.n < q.n",
        duck="SELECT t.id, q.n FROM ta t ASOF LEFT JOIN qa q ON t.n < q.n")
    f.q("SELECT t.id, q.ts FROM ta t ASOF LEFT OUTER JOIN qa q ON t.sym = q.sym AND t.ts <= q.ts")

    f.comment("a VARCHAR key column on the left against a SYMBOL key on the right, and the reverse")
    f.q("SELECT t.id, t.sym, q.ts, q.bid FROM tv t ASOF JOIN qa q ON t.sym = q.sym AND t.ts >= q.ts")
    f.q("SELECT t.id, t.sym, q.ts, q.bid FROM tv t ASOF LEFT JOIN qa q ON t.sym = q.sym AND t.ts < q.ts")
    f.q("SELECT a.ts, a.sym, b.id, b.px FROM qa a ASOF LEFT JOIN tv b ON a.sym = b.sym AND a.ts >= b.ts")

    f.comment("empty and one-row tables")
    f.q("SELECT t.id, q.ts, q.bid FROM ta t ASOF JOIN q_empty q ON t.sym = q.sym AND t.ts >= q.ts")
    f.q("SELECT t.id, q.ts, q.bid FROM ta t ASOF LEFT JOIN q_empty q ON t.sym = q.sym AND t.ts >= q.ts")
    f.q("SELECT count(*), count(q.bid) FROM ta t ASOF LEFT JOIN q_empty q ON t.ts < q.ts")
    f.q("SELECT t.id, q.ts, q.bid FROM t_empty t ASOF LEFT JOIN qa q ON t.ts <= q.ts")
    f.q("SELECT count(*) FROM t_empty t ASOF LEFT JOIN q_empty q ON t.sym = q.sym AND t.ts >= q.ts")
    f.q("SELECT t.id, t.px, q.ts, q.bid FROM t_one t ASOF JOIN q_one q ON t.sym = q.sym AND t.ts >= q.ts")
    f.q("SELECT t.id, t.px, q.ts, q.bid FROM t_one t ASOF LEFT JOIN q_one q ON t.sym = q.sym AND t.ts > q.ts")
    f.q("SELECT t.id, q.ts, q.bid FROM ta t ASOF LEFT JOIN q_one q ON t.sym = q.sym AND t.ts >= q.ts")
    f.q("SELECT t.id, q.ts, q.bid FROM ta t ASOF JOIN q_one q ON t.ts < q.ts")
    f.q("SELECT t.id, q.ts, q.sym, q.bid FROM t_one t ASOF JOIN qa q ON t.ts > q.ts")
    f.q("SELECT t.id, q.ts, q.bid FROM t_one t ASOF LEFT JOIN qa q ON t.sym = q.sym AND t.ts < q.ts")

    f.comment("malformed ASOF joins: no inequality, two inequalities, OR, <>, no ON")
    f.err("SELECT t.id FROM ta t ASOF JOIN qa q ON t.sym = q.sym")
    f.err("SELECT t.id FROM ta t ASOF JOIN qa q ON t.ts = q.ts")
    f.err("SELECT t.id FROM ta t ASOF JOIN qa q ON t.sym = q.sym AND t.ts >= q.ts AND t.n >= q.n")
    f.err("SELECT t.id FROM ta t ASOF JOIN qa q ON t.ts >= q.ts AND t.ts <= q.ts")
    f.err("SELECT t.id FROM ta t ASOF LEFT JOIN qa q ON t.sym = q.sym OR t.ts >= q.ts")
    f.err("SELECT t.id FROM ta t ASOF JOIN qa q ON t.sym = q.sym AND t.ts <> q.ts")
    f.err("SELECT t.id FROM ta t ASOF JOIN qa q")
    f.err("SELECT t.id FROM ta t ASOF OUTER JOIN qa q ON t.ts >= q.ts")
    f.err("SELECT t.id FROM ta t ASOF SEMI OUTER JOIN qa q ON t.ts >= q.ts")
    f.comment("DuckDB's forms: USING (keys..., time), the last column meaning t.time >= q.time and SELECT *\n"
              "showing each USING column once; conditions on one side (on the right they filter the rows\n"
              "searched; a left row failing its own condition finds no match); string ordering columns")
    f.q("SELECT t.id, t.ts, sym, q.ts, q.bid FROM ta t ASOF JOIN qa q USING (sym, ts)")
    f.q("SELECT t.id, ts, sym, q.bid FROM ta t ASOF LEFT JOIN qa q USING (sym, ts)")
    f.q("SELECT * FROM ta t ASOF LEFT JOIN qa q USING (sym, venue, ts)")
    f.q("%s FROM ta t ASOF LEFT JOIN qa q ON t.sym = q.sym AND t.ts >= q.ts AND q.bid > 100" % ASOF_SEL)
    f.q("%s FROM ta t ASOF JOIN qa q ON t.sym = q.sym AND t.ts >= q.ts AND q.venue = 1" % ASOF_SEL)
    f.q("%s FROM ta t ASOF LEFT JOIN qa q ON t.sym = q.sym AND t.ts >= q.ts AND t.venue = 1" % ASOF_SEL)
    f.q("%s FROM ta t ASOF JOIN qa q ON t.sym = q.sym AND t.ts <= q.ts AND t.px > 100 AND q.ask IS NOT NULL" % ASOF_SEL)
    f.q("%s FROM ta t ASOF LEFT JOIN qa q ON t.ts >= q.ts AND t.sym = 'AAPL'" % ASOF_SEL)
    f.q("SELECT t.id, q.sym FROM tv t ASOF LEFT JOIN (SELECT DISTINCT sym FROM qa WHERE sym IS NOT NULL) q "
        "ON t.sym >= q.sym")
    f.q("SELECT t.id, q.sym FROM tv t ASOF JOIN (SELECT DISTINCT CAST(sym AS VARCHAR) AS sym FROM qa) q ON t.sym < q.sym")
    f.err("SELECT t.id FROM tv t ASOF JOIN qa q ON nearest(t.sym, q.sym)", duck="SELECT 1 FROM nonexistent_table")
    f.comment("IS NOT DISTINCT FROM keys: NULL matches NULL (DuckDB 1.5.6's ASOF does not match NULL keys\n"
              "even so; its answer is taken from the same join on keys with NULL spelled out)")
    nd_duck = ("SELECT t.id, t.ts, t.sym, t.px, q.ts, q.bid FROM ta t ASOF LEFT JOIN qa q "
               "ON coalesce(t.sym, '<null>') = coalesce(q.sym, '<null>') AND t.ts >= q.ts")
    f.q("%s FROM ta t ASOF LEFT JOIN qa q ON t.sym IS NOT DISTINCT FROM q.sym AND t.ts >= q.ts" % ASOF_SEL,
        duck=nd_duck)
    f.q("SELECT t.id, q.venue FROM ta t JOIN (SELECT DISTINCT sym, venue FROM qa) q ON t.sym IS NOT DISTINCT FROM q.sym")
    f.q("SELECT id, sym IS DISTINCT FROM 'AAPL', venue IS NOT DISTINCT FROM NULL FROM ta")
    f.comment("ASOF SEMI / ANTI JOIN: the left rows with / without a match, left columns only")
    f.q("SELECT * FROM ta t ASOF SEMI JOIN qa q ON t.sym = q.sym AND t.ts >= q.ts")
    f.q("SELECT * FROM ta t ASOF ANTI JOIN qa q ON t.sym = q.sym AND t.ts >= q.ts")
    f.q("SELECT t.id FROM ta t ASOF ANTI JOIN qa q ON t.sym = q.sym AND t.venue = q.venue AND t.ts < q.ts")
    f.q("SELECT id, px FROM ta t ASOF SEMI JOIN qa q ON t.sym = q.sym AND t.ts >= q.ts AND q.bid > 100")
    f.q("SELECT count(*) FROM ta t ASOF ANTI JOIN qa q ON t.ts >= q.ts")
    f.comment("conditions between the two sides beside the keys and the inequality (an OR, arithmetic over\n"
              "both, a time distance) are part of the match: the nearest right row that also satisfies\n"
              "them (DuckDB's test_asof_semi_anti_mark and test_asof_join_predicates)")
    def between(kind, sel, on, backward=True):
        # DuckDB 1.5.6 fails to bind some of these: its answer from a plain join instead.
        join = "ASOF JOIN" if kind == "JOIN" else "ASOF %s JOIN" % kind
        f.q("%s FROM ta t %s qa q ON %s" % (sel, join, on),
            duck=common.duck_asof_nearest(kind, sel, "ta", "qa", on, backward))

    between("SEMI", "SELECT *", "t.sym = q.sym AND t.ts >= q.ts AND t.px + q.bid > 300")
    between("ANTI", "SELECT *", "t.sym = q.sym AND t.ts >= q.ts AND t.px + q.bid > 300")
    between("LEFT", ASOF_SEL, "t.sym = q.sym AND t.ts >= q.ts AND (t.venue = q.venue OR q.bid > 150)")
    between("JOIN", ASOF_SEL, "(t.sym = q.sym OR t.sym = 'AAPL') AND t.ts >= q.ts")
    between("LEFT", ASOF_SEL, "t.sym = q.sym AND t.ts <= q.ts AND q.bid - t.px > 0", backward=False)
    between("LEFT", "SELECT t.id, q.ts", "t.sym = q.sym AND t.ts >= q.ts AND epoch_ns(t.ts) - epoch_ns(q.ts) < 60000000000")
    f.comment("ASOF RIGHT / FULL JOIN: the matches, then every right row no left row matched (FULL: and\n"
              "the unmatched left rows), with NULLs for the other side. DuckDB 1.5.6 hangs on keyed RIGHT\n"
              "and FULL ASOF joins: its answers come from its inner or LEFT ASOF join of numbered rows plus\n"
              "the right rows that join left unmatched (common.duck_asof_outer). The left rows here have\n"
              "times: DuckDB matches a NULL left time on larger inputs (NULL times never match here; see\n"
              "crates/zepto-sql/tests/sql/asof_outer.rs)")
    tt = "(SELECT * FROM ta WHERE ts IS NOT NULL)"

    def outer(kind, sel, on, left=tt, right="qa", tail="", join=None, dleft=None, dright=None, don=None):
        sql = "%s FROM %s t %s %s q ON %s%s" % (sel, left, join or "ASOF %s JOIN" % kind, right, on,
                                               " " + tail if tail else "")
        duck = common.duck_asof_outer(kind, sel, dleft or left, dright or right, don or on, tail)
        f.q(sql, duck=duck)

    for kind in ("RIGHT", "FULL"):
        for op in (">=", ">", "<=", "<"):
            outer(kind, ASOF_SEL + ", q.sym", "t.sym = q.sym AND t.ts %s q.ts" % op)
    outer("RIGHT", "SELECT t.id, q.ts, q.sym, q.bid", "t.ts > q.ts")
    outer("FULL", "SELECT t.id, q.ts, q.bid", "q.ts >= t.ts")
    outer("FULL", "SELECT t.id, t.venue, q.ts, q.venue", "t.sym = q.sym AND t.venue = q.venue AND t.ts <= q.ts",
          join="ASOF FULL OUTER JOIN")
    outer("RIGHT", "SELECT t.id, t.n, q.n, q.bid", "t.sym = q.sym AND t.n >= q.n", join="ASOF RIGHT OUTER JOIN")
    outer("RIGHT", "SELECT t.*, q.*", "t.sym = q.sym AND t.x < q.x")
    outer("RIGHT", "SELECT t.id, q.ts, q.bid", "t.sym = q.sym AND t.ts >= q.ts", tail="WHERE t.id IS NULL")
    outer("FULL", "SELECT count(*), count(t.id), count(q.ts), sum(q.bid)", "t.sym = q.sym AND t.ts >= q.ts")
    outer("RIGHT", "SELECT q.sym, count(*), count(t.id)", "t.sym = q.sym AND t.ts < q.ts", tail="GROUP BY q.sym")
    f.comment("USING: the bare time is the right row's (RIGHT) or whichever side has the row (FULL), as in\n"
              "DuckDB; t.ts and q.ts stay each side's own")
    using = dict(don="t.sym = q.sym AND t.ts >= q.ts")
    ucols = "t.id, %s AS ts, %s AS sym, t.venue, t.px, t.qty, t.n, t.x, q.venue, q.bid, q.ask, q.n, q.x"
    f.q("SELECT * FROM %s t ASOF RIGHT JOIN qa q USING (sym, ts)" % tt,
        duck=common.duck_asof_outer("RIGHT", "SELECT " + ucols % ("q.ts", "q.sym"), tt, "qa", using["don"]))
    f.q("SELECT sym, ts, t.ts, q.ts, t.id, q.bid FROM %s t ASOF RIGHT JOIN qa q USING (sym, ts)" % tt,
        duck=common.duck_asof_outer("RIGHT", "SELECT q.sym, q.ts, t.ts, q.ts, t.id, q.bid", tt, "qa", using["don"]))
    f.q("SELECT sym, ts, t.sym, q.sym, t.ts, q.ts, t.id, q.bid FROM %s t ASOF FULL JOIN qa q USING (sym, ts)" % tt,
        duck=common.duck_asof_outer("FULL", "SELECT coalesce(t.sym, q.sym), coalesce(t.ts, q.ts), t.sym, q.sym, "
                                    "t.ts, q.ts, t.id, q.bid", tt, "qa", using["don"]))
    f.q("SELECT sym, t.sym, q.sym, t.id, q.venue FROM %s t FULL JOIN (SELECT DISTINCT sym, venue FROM qa) q "
        "USING (sym)" % tt)
    f.comment("t.* and q.* list each side's own columns in the table's order")
    f.q("SELECT t.*, q.* FROM %s t FULL JOIN (SELECT DISTINCT sym, venue FROM qa) q USING (sym)" % tt)
    f.q("SELECT q.*, t.* FROM %s t RIGHT JOIN (SELECT DISTINCT sym, venue FROM qa) q USING (sym, venue)" % tt)
    f.q("SELECT t.*, q.ts FROM %s t ASOF RIGHT JOIN qa q USING (sym, ts)" % tt,
        duck=common.duck_asof_outer("RIGHT", "SELECT t.*, q.ts", tt, "qa", using["don"]))
    f.comment("empty sides")
    outer("RIGHT", "SELECT t.id, q.ts", "t.ts >= q.ts", left="ta", right="q_empty")
    outer("RIGHT", "SELECT t.id, q.ts, q.bid", "t.sym = q.sym AND t.ts >= q.ts", left="t_empty")
    outer("FULL", "SELECT t.id, q.ts, q.bid", "t.sym = q.sym AND t.ts >= q.ts", left="t_empty", right="q_one")
    outer("FULL", "SELECT t.id, t.px, q.ts, q.bid", "t.ts < q.ts", left="t_one", right="q_empty")
    f.comment("RIGHT ASOF JOIN is a spelling of ASOF RIGHT JOIN (DuckDB takes only the latter). A condition\n"
              "on one side (DuckDB 1.5.6 refuses them in RIGHT and FULL ASOF joins) only decides who matches:\n"
              "a row failing it is kept unmatched. Checked against the same join with the condition folded\n"
              "into the key.")
    outer("RIGHT", "SELECT t.id, q.ts, q.bid", "t.sym = q.sym AND t.ts >= q.ts", join="RIGHT ASOF JOIN")
    outer("RIGHT", "SELECT t.id, q.ts, q.bid", "t.sym = q.sym AND t.ts >= q.ts AND q.bid > 100",
          dright="(SELECT *, CASE WHEN bid > 100 THEN sym END AS g FROM qa)", don="t.sym = q.g AND t.ts >= q.ts")
    outer("FULL", "SELECT t.id, q.ts, q.bid", "t.sym = q.sym AND t.ts >= q.ts AND t.venue = 1",
          dleft="(SELECT *, CASE WHEN venue = 1 THEN sym END AS g FROM %s)" % tt, don="t.g = q.sym AND t.ts >= q.ts")
    f.comment("SPLICE JOIN: every row of both sides once; a left row with the latest right row at or before\n"
              "it, a right row with the latest left row strictly before it (ties: right first). Checked as\n"
              "the union of the two ASOF LEFT JOINs in DuckDB.")
    # DuckDB's answer is only determined when no two rows of a side share (keys, time).
    ta = [t for t in f.tables if t.name == "ta"][0]
    seen, dup = {}, set()
    for r in ta.rows:
        k = (r[2], r[3], r[1])
        if k in seen:
            dup.update({seen[k], r[0]})
        seen[k] = r[0]
    tsub = "(SELECT * FROM ta WHERE id NOT IN (%s))" % ", ".join(str(i) for i in sorted(dup) or [-1])
    for keys_z, keys_l, keys_r in [("ON t.sym = q.sym", "t.sym = q.sym AND ", "q.sym = t.sym AND "),
                                   ("ON t.sym = q.sym AND t.venue = q.venue",
                                    "t.sym = q.sym AND t.venue = q.venue AND ", "q.sym = t.sym AND q.venue = t.venue AND ")]:
        sel = "t.id, t.ts, t.px, q.ts, q.bid"
        f.q("SELECT %s FROM %s t SPLICE JOIN qa q %s" % (sel, tsub, keys_z),
            duck="SELECT %s FROM %s t ASOF LEFT JOIN qa q ON %st.ts >= q.ts UNION ALL "
                 "SELECT %s FROM qa q ASOF LEFT JOIN %s t ON %sq.ts > t.ts" % (sel, tsub, keys_l, sel, tsub, keys_r))
    f.q("SELECT t.id, q.bid FROM t_one t SPLICE JOIN q_empty q ON t.sym = q.sym",
        duck="SELECT t.id, NULL::DOUBLE FROM t_one t")
    f.err("SELECT * FROM ta t SPLICE JOIN qa q ON t.ts >= q.ts", duck="SELECT 1 FROM nonexistent_table")


# --------------------------------------------------------------------------------------
def s19_vectors(f):
    f.comment("FLOAT[n] vectors and the distance functions (docs/vectors.md)")
    f.ok("CREATE TABLE emb (ts TIMESTAMP, sym SYMBOL, id INT, v FLOAT[3])")
    f.ok("INSERT INTO emb VALUES ('2024-01-02 09:30:00', 'A', 1, [1, 0, 0]), "
         "('2024-01-02 09:31:00', 'A', 2, [0.5, -0.25, 2]), ('2024-01-02 09:32:00', 'B', 3, NULL), "
         "('2024-01-02 09:33:00', 'B', 4, '[3, 4, 0]'), ('2024-01-02 09:34:00', 'C', 5, [0, 0, 0]), "
         "('2024-01-02 09:35:00', 'C', 6, [0.1, 0.2, 0.3])")
    f.q("SELECT id, v FROM emb")
    f.q("SELECT id FROM emb WHERE v IS NULL")
    f.q("SELECT id, array_length(v) FROM emb")
    f.q("SELECT [1.5, -2, 3]::FLOAT[3], '[1, 2]'::FLOAT[2], CAST([0.1] AS REAL[1])")
    for fn in ("array_cosine_similarity", "array_cosine_distance", "array_distance", "array_inner_product",
               "array_negative_inner_product"):
        q = "[1, 2, 2]::FLOAT[3]"
        f.q("SELECT id, round(%s(v, %s), 4) FROM emb" % (fn, q),
            duck="SELECT id, round(%s(v, %s)::DOUBLE, 4) FROM emb" % (fn, q))
        f.q("SELECT a.id, round(%s(a.v, b.v), 4) FROM emb a JOIN emb b ON a.id = b.id + 1" % fn,
            duck="SELECT a.id, round(%s(a.v, b.v)::DOUBLE, 4) FROM emb a JOIN emb b ON a.id = b.id + 1" % fn)
    f.q("SELECT id FROM emb WHERE v IS NOT NULL ORDER BY array_distance(v, [1, 1, 1]::FLOAT[3]), id LIMIT 3",
        sort="nosort")
    f.q("SELECT id FROM emb WHERE v IS NOT NULL ORDER BY array_cosine_distance(v, [3, 4, 0.5]::FLOAT[3]), id LIMIT 2",
        sort="nosort")
    f.comment("errors: wrong dimensions, vectors where numbers belong (DuckDB rejects them too)")
    f.err("INSERT INTO emb VALUES ('2024-01-02 10:00:00', 'A', 9, [1, 2])")
    f.err("INSERT INTO emb VALUES ('2024-01-02 10:00:00', 'A', 9, '[1, 2, 3, 4]')")
    f.err("SELECT [1, 2]::FLOAT[3]")
    f.err("SELECT '[1, 2]'::FLOAT[3]")
    f.err("SELECT array_distance(v, [1, 2]::FLOAT[2]) FROM emb")
    f.err("SELECT array_cosine_similarity(v, 3) FROM emb")
    f.err("SELECT v + 1 FROM emb")
    f.comment("the failed statements changed nothing")
    f.q("SELECT count(*), count(v) FROM emb")


def s20_duckdb_style(f):
    f.comment("FROM-first (FROM t [SELECT ...]) and trailing commas, as DuckDB takes them")
    f.q("FROM people", "rowsort")
    f.q("FROM people SELECT id, name", "rowsort")
    f.q("FROM people SELECT id, name, WHERE age > 30", "rowsort")
    f.q("FROM people WHERE dept = 'eng'", "rowsort")
    f.q("FROM people SELECT dept, count(*) AS n GROUP BY dept ORDER BY dept", "nosort")
    f.q("FROM people SELECT DISTINCT dept ORDER BY dept", "nosort")
    f.q("FROM trades SELECT sym, max(price) AS hi, GROUP BY sym ORDER BY sym", "nosort")
    f.q("FROM people ORDER BY id LIMIT 3", "nosort")
    f.q("FROM people p JOIN depts d ON p.dept = d.dept SELECT p.id, d.dept ORDER BY p.id", "nosort")
    f.q("SELECT * FROM (FROM people SELECT id, age WHERE age IS NOT NULL) ORDER BY id", "nosort")
    f.q("WITH e AS (FROM people WHERE dept = 'eng') FROM e SELECT count(*)", "rowsort")
    f.q("SELECT id FROM people WHERE id IN (FROM people SELECT id WHERE age > 40) ORDER BY id", "nosort")
    f.q("FROM people SELECT id UNION ALL FROM depts SELECT 0 ORDER BY 1", "nosort")
    f.q("SELECT id, name, FROM people ORDER BY id", "nosort")
    f.comment("SELECT aliases in WHERE (a column of the same name wins)")
    f.q("SELECT id, age * 2 AS dbl FROM people WHERE dbl > 60", "rowsort")
    f.q("SELECT id AS age, name FROM people WHERE age > 40", "rowsort")
    f.q("SELECT sym, price * size AS notional FROM trades WHERE notional > 500000 AND sym IS NOT NULL", "rowsort")
    f.q("FROM trades SELECT sym, price - 100 AS p WHERE p > 200 AND p < 268", "rowsort")
    f.q("SELECT upper(name) AS u FROM people WHERE u LIKE 'A%' OR u IS NULL", "rowsort")
    f.comment("INTERVAL (n) unit: n of the unit, n any expression")
    f.q("SELECT count(*) FROM trades WHERE ts < TIMESTAMP '2024-01-02 10:00:00' + INTERVAL (30) MINUTE", "rowsort")
    f.q("SELECT sym, count(*) FROM trades WHERE ts + INTERVAL (2 * 3) HOUR < TIMESTAMP '2024-01-02 16:00:00' GROUP BY sym", "rowsort")
    f.q("SELECT count(*) FROM trades WHERE ts >= TIMESTAMP '2024-01-03 00:00:00' - INTERVAL (size % 3) DAY", "rowsort")
    f.q("SELECT count(*) FROM trades WHERE ts - INTERVAL 90 SECOND > TIMESTAMP '2024-01-04 15:00:00'", "rowsort")
    f.comment("JOIN ... USING: SELECT * shows each USING column once (COALESCE of both sides for RIGHT and FULL)")
    f.q("SELECT * FROM people JOIN depts USING (dept)", "rowsort")
    f.q("SELECT * FROM people LEFT JOIN depts USING (dept)", "rowsort")
    f.q("SELECT * FROM people p RIGHT JOIN depts d USING (dept)", "rowsort")
    f.q("SELECT dept, count(p.id) AS n FROM people p FULL JOIN depts d USING (dept) GROUP BY dept", "rowsort")
    f.q("SELECT dept, d.dept, p.id FROM people p JOIN depts d USING (dept)", "rowsort")
    f.comment("ORDER BY ALL: every output column, left to right")
    f.q("SELECT dept, name, id FROM people ORDER BY ALL", "nosort")
    f.q("SELECT dept, age FROM people ORDER BY ALL DESC", "nosort")
    f.q("SELECT age, dept FROM people ORDER BY ALL NULLS FIRST", "nosort")
    f.q("FROM people SELECT dept, count(*) AS n GROUP BY dept ORDER BY ALL", "nosort")
    f.q("SELECT sym, price, size FROM trades ORDER BY ALL LIMIT 7", "nosort")
    f.q("SELECT DISTINCT dept FROM people ORDER BY ALL DESC NULLS LAST", "nosort")
    f.q("SELECT id FROM people UNION SELECT 0 ORDER BY ALL DESC", "nosort")
    f.q("SELECT * FROM depts ORDER BY ALL", "nosort")
    f.comment("range() and generate_series() as table functions")
    f.q("SELECT * FROM range(5)", "nosort")
    f.q("SELECT * FROM generate_series(5)", "nosort")
    f.q("SELECT * FROM range(2, 9, 3)", "nosort")
    f.q("SELECT * FROM generate_series(10, 1, -3)", "nosort")
    f.q("SELECT * FROM range(10, 0, -4)", "nosort")
    f.q("SELECT * FROM range(3, 1)", "nosort")
    f.q("SELECT * FROM range(NULL)", "nosort")
    f.q("SELECT count(*), sum(range), min(range), max(range) FROM range(1000000)", "nosort")
    f.q("SELECT i * 2 AS d FROM range(4) t(i) WHERE t.i > 0 ORDER BY d", "nosort")
    f.q("SELECT a.range AS x, b.range AS y FROM range(0, 5, 2) a, range(2) b ORDER BY ALL", "nosort")
    f.q("SELECT p.id, g.generate_series FROM people p JOIN generate_series(1, 3) g ON p.id = g.generate_series ORDER BY 1", "nosort")
    f.q("SELECT * FROM range(TIMESTAMP '2024-01-01 00:00:00', TIMESTAMP '2024-01-02 00:00:00', INTERVAL '6 hours')",
        "nosort", us_ok=True)
    f.q("SELECT * FROM generate_series(TIMESTAMP '2024-01-01 00:00:00', TIMESTAMP '2024-01-02 00:00:00', INTERVAL '6 hours')",
        "nosort", us_ok=True)
    f.q("SELECT * FROM range(TIMESTAMP '2024-01-02 00:00:00', TIMESTAMP '2024-01-01 00:00:00', INTERVAL '-7 hours')",
        "nosort", us_ok=True)
    f.q("SELECT * FROM range(DATE '2024-01-01', DATE '2024-01-04', INTERVAL 1 DAY)", "nosort", us_ok=True)
    f.q("SELECT b.range AS bucket, count(t.ts) AS n FROM range(TIMESTAMP '2024-01-02 09:00:00', TIMESTAMP '2024-01-02 17:00:00', "
        "INTERVAL '2 hours') b LEFT JOIN trades t ON t.ts >= b.range AND t.ts < b.range + INTERVAL '2 hours' GROUP BY 1 ORDER BY 1",
        "nosort", us_ok=True)
    f.comment("'infinity' and '-infinity' timestamps: after and before every other; fields NULL")
    f.q("SELECT TIMESTAMP 'infinity' > TIMESTAMP '2262-01-01 00:00:00', TIMESTAMP '-infinity' < TIMESTAMP '1678-01-01 00:00:00'",
        "rowsort")
    f.q("SELECT CAST('Infinity' AS TIMESTAMP) = TIMESTAMP 'infinity', CAST('-infinity' AS TIMESTAMP) = TIMESTAMP '-infinity'",
        "rowsort")
    f.q("SELECT CAST(TIMESTAMP 'infinity' AS VARCHAR), CAST(TIMESTAMP '-infinity' AS VARCHAR)", "rowsort")
    f.q("SELECT count(*) FROM trades WHERE ts < TIMESTAMP 'infinity' AND ts > TIMESTAMP '-infinity'", "rowsort")
    f.q("SELECT (TIMESTAMP 'infinity' + INTERVAL '1 day') = TIMESTAMP 'infinity', "
        "(TIMESTAMP '-infinity' - INTERVAL '1 day') = TIMESTAMP '-infinity'", "rowsort")
    f.q("SELECT extract(year FROM TIMESTAMP 'infinity') IS NULL, date_trunc('day', TIMESTAMP '-infinity') = TIMESTAMP '-infinity'",
        "rowsort")
    f.q("SELECT sym, max(coalesce(ts, TIMESTAMP 'infinity')) = TIMESTAMP 'infinity' AS has_null_ts FROM trades GROUP BY sym",
        "rowsort")
    f.err("SELECT * FROM range(0, 10, 0)")
    f.err("SELECT * FROM range(1.5)")
    f.err("SELECT * FROM range(TIMESTAMP '2024-01-01 00:00:00', TIMESTAMP '2024-01-02 00:00:00')")


# --------------------------------------------------------------------------------------
NAN = "CAST('NaN' AS DOUBLE)"
NANF = "CAST('NaN' AS REAL)"
INF = "CAST('Infinity' AS DOUBLE)"


def s21_nan(f):
    f.comment("NaN, infinities and signed zeros compare as DuckDB and PostgreSQL order them: NaN equals\n"
              "NaN and is greater than every other value (+Infinity included), -0.0 equals 0.0.")
    f.ok("CREATE TABLE fl (k INT, x DOUBLE, y DOUBLE, r REAL, s SYMBOL)")
    rows = [("1", NAN, "1.5", NANF, "'a'"), ("2", "1.5", NAN, "1.5", "'b'"), ("3", NAN, NAN, NANF, "'a'"),
            ("4", INF, NAN, "CAST('Infinity' AS REAL)", "'c'"), ("5", "-" + INF, "0.0", "-2.0", "'b'"),
            ("6", "-0.0", "0.0", "-0.0", "'a'"), ("7", "0.0", "-0.0", "0.0", "'c'"), ("8", "NULL", NAN, "NULL", "'a'"),
            ("9", NAN, "NULL", NANF, "NULL"), ("10", "2.25", "2.25", "2.25", "'b'"), ("11", "-7.5", INF, "-7.5", "'c'"),
            ("12", NAN, INF, NANF, "'b'")]
    f.ok("INSERT INTO fl VALUES " + ", ".join("(%s)" % ", ".join(r) for r in rows))
    f.ok("CREATE TABLE fr (j INT, v DOUBLE)")
    f.ok("INSERT INTO fr VALUES (1, %s), (2, 1.5), (3, -0.0), (4, %s), (5, NULL), (6, 2.25)" % (NAN, INF))
    for op in ("=", "<>", "<", "<=", ">", ">="):
        f.q("SELECT k FROM fl WHERE x %s 1.5" % op)
        f.q("SELECT k FROM fl WHERE x %s y" % op)
        f.q("SELECT k, x %s y, x %s %s, %s %s y FROM fl" % (op, op, NAN, INF, op))
        f.q("SELECT k FROM fl WHERE r %s 1.5" % op)
        f.q("SELECT k FROM fl WHERE x %s %s" % (op, NAN))
        f.q("SELECT k FROM fl WHERE x %s 0.0" % op)
    f.q("SELECT %s = %s, %s > 1.6, %s < %s, %s <> %s, -0.0 = 0.0, %s >= %s" % (NAN, NAN, NAN, INF, NAN, NAN, NAN,
                                                                                   NAN, INF))
    f.q("SELECT k FROM fl WHERE x BETWEEN 1 AND %s" % NAN)
    f.q("SELECT k FROM fl WHERE x NOT BETWEEN -1 AND 3")
    f.q("SELECT k FROM fl WHERE x IN (1.5, %s)" % NAN)
    f.q("SELECT k FROM fl WHERE x NOT IN (1.5, %s)" % NAN)
    f.q("SELECT k FROM fl WHERE x IN (0.0)")
    f.q("SELECT k, CASE WHEN x > 100 THEN 'big' WHEN x = x THEN 'same' ELSE 'other' END FROM fl")
    f.q("SELECT k, greatest(x, y), least(x, y) FROM fl")
    f.q("SELECT x, count(*) FROM fl GROUP BY x")
    f.q("SELECT r, count(*) FROM fl GROUP BY r")
    f.q("SELECT s, x, count(*) FROM fl GROUP BY s, x")
    f.q("SELECT DISTINCT x FROM fl")
    f.q("SELECT count(DISTINCT x), count(DISTINCT y), count(DISTINCT r) FROM fl")
    f.q("SELECT min(x), max(x), min(y), max(y), min(r), max(r) FROM fl")
    f.q("SELECT s, min(x), max(x) FROM fl GROUP BY s")
    f.q("SELECT k, x FROM fl ORDER BY x, k", sort="nosort")
    f.q("SELECT k, x FROM fl ORDER BY x DESC NULLS LAST, k", sort="nosort")
    f.q("SELECT k, j FROM fl JOIN fr ON x = v")
    f.q("SELECT k, j FROM fl LEFT JOIN fr ON x = v")
    f.q("SELECT k, j FROM fl JOIN fr ON x < v")
    f.q("SELECT k FROM fl WHERE x IN (SELECT v FROM fr)")
    f.q("SELECT k FROM fl WHERE x NOT IN (SELECT v FROM fr WHERE v IS NOT NULL)")
    f.q("SELECT x FROM fl UNION SELECT v FROM fr")
    f.q("SELECT x FROM fl INTERSECT SELECT v FROM fr")
    f.q("SELECT x FROM fl EXCEPT SELECT v FROM fr")
    f.q("SELECT k, count(*) OVER (PARTITION BY x) FROM fl")
    f.q("SELECT k, x, rank() OVER (ORDER BY x) FROM fl")
    f.q("SELECT s, count(*) FROM fl WHERE x > 2 GROUP BY s")
    f.q("SELECT k FROM fl WHERE NOT (x < 1)")
    f.q("SELECT k FROM fl WHERE x > 1 AND y > 1")
    f.q("SELECT k, nullif(x, %s), coalesce(x, y) = y FROM fl" % NAN)
    for op in (">=", ">", "<=", "<"):
        f.q("SELECT k, j FROM fl ASOF JOIN fr ON x %s v" % op)
        f.q("SELECT k, j FROM fl ASOF LEFT JOIN fr ON x %s v" % op)


ALL_SECTIONS = [
    ("01_select_arith", "Projections, literals and arithmetic", ["nums", "trades", "one_row", "empty_t"], s01_select_arith),
    ("02_where", "WHERE: comparisons, three-valued logic, BETWEEN, IN, LIKE, IS NULL",
     ["people", "trades", "nums", "empty_t"], s02_where),
    ("03_case_cast_coalesce", "CASE, CAST, COALESCE", ["nums", "people", "trades"], s03_case_cast_coalesce),
    ("04_strings", "String functions", ["people", "trades", "orders"], s04_strings),
    ("05_math", "Math functions", ["nums", "people", "trades", "empty_t", "one_row"], s05_math),
    ("06_aggregates", "Aggregates", ["trades", "people", "nums", "empty_t", "one_row", "orders", "quotes"],
     s06_aggregates),
    ("07_group_by_having", "GROUP BY and HAVING", ["trades", "people", "nums", "orders", "quotes", "empty_t"], s07_group_by),
    ("08_order_limit_distinct", "ORDER BY, LIMIT/OFFSET, DISTINCT",
     ["people", "nums", "trades", "orders", "empty_t", "one_row"], s08_order_limit_distinct),
    ("09_subqueries_cte", "CTEs, FROM-subqueries, scalar / IN / EXISTS subqueries",
     ["trades", "quotes", "people", "depts", "orders", "nums", "empty_t", "one_row"], s09_subqueries_cte),
    ("10_set_ops", "UNION / UNION ALL", ["trades", "quotes", "people", "depts", "orders", "nums", "empty_t", "one_row"],
     s10_set_ops),
    ("11_joins", "Joins", ["people", "depts", "orders", "trades", "quotes", "nums", "empty_t", "one_row"], s11_joins),
    ("12_timestamps", "Timestamps, intervals, date_trunc, extract, epoch_ns",
     ["trades", "quotes", "one_row", "people", "orders"], s12_timestamps),
    ("13_ddl_dml", "CREATE / DROP / ALTER TABLE, INSERT", [], s13_ddl_dml),
    ("14_errors", "Statements that must fail", ["trades", "quotes", "people", "depts"], s14_errors),
    ("15_analytics", "Mixed multi-table queries", ["trades", "quotes", "people", "depts", "orders", "nums"],
     s15_analytics),
    ("16_asof", "ASOF JOIN", ["ta", "qa", "tv", "t_empty", "q_empty", "t_one", "q_one"], s16_asof),
    ("17_window", "Window functions", ["trades", "people", "nums", "empty_t", "one_row"], s17_window),
    ("18_sample_latest", "SAMPLE BY with FILL, LATEST ON", ["trades", "people"], s18_sample_latest),
    ("19_vectors", "FLOAT[n] vectors and distance functions", [], s19_vectors),
    ("20_duckdb_style", "DuckDB-style SQL: FROM-first, trailing commas, aliases in WHERE, INTERVAL (n) unit, ORDER BY ALL, range/generate_series, infinite timestamps", ["people", "depts", "trades"],
     s20_duckdb_style),
    ("21_nan", "NaN, infinities and signed zeros in comparisons, grouping, joins and ordering", [], s21_nan),
]

