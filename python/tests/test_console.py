"""The web console (`/console`) in headless Chromium (Debian's `chromium` and `chromedriver`,
driven by Selenium; nothing is downloaded at test time): load it, give the key, type a query,
run it with Ctrl-Enter, read the grid against the HTTP door's answer, page through 1M rows,
chart xbar bars as candlesticks and lines per symbol, see an error's position, watch live
ingest. Screenshots go to target/console-screenshots/ (test artifacts).

`make test` installs the browser (`make browser`) and sets ZEPTO_REQUIRE_BROWSER=1, which
makes a missing browser a failure; without it the tests are skipped."""

import json
import os
import random
import shutil
import threading
import time
import urllib.error
import urllib.request

import pytest

from conftest import API_KEY, ROOT, free_port, serve

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
DRIVER = shutil.which("chromedriver") or "/usr/bin/chromedriver"
SHOTS = ROOT / "target" / "console-screenshots"
SYMS = ["AAPL", "MSFT", "NVDA"]


def have_browser():
    return os.path.exists(CHROMIUM) and os.path.exists(DRIVER)


if not have_browser():
    if os.environ.get("ZEPTO_REQUIRE_BROWSER") == "1":
        pytest.fail(f"{CHROMIUM} or {DRIVER} is missing (make browser installs Debian's chromium and chromium-driver)",
                    pytrace=False)
    pytest.skip("no chromium/chromedriver (make browser installs them)", allow_module_level=True)

from selenium import webdriver  # noqa: E402
from selenium.webdriver.chrome.service import Service  # noqa: E402
from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.common.keys import Keys  # noqa: E402
from selenium.webdriver.support.ui import Select, WebDriverWait  # noqa: E402


def http(base, path, body=None, method=None):
    req = urllib.request.Request(base + path, data=body.encode() if body is not None else None, method=method)
    req.add_header("Authorization", f"Bearer {API_KEY}")
    with urllib.request.urlopen(req) as r:
        return r.read().decode()


@pytest.fixture(scope="module")
def base():
    port = free_port()
    proc = serve("--pg", "off", http=f"127.0.0.1:{port}")
    url = f"http://127.0.0.1:{port}"
    rnd = random.Random(7)
    http(url, "/query", "CREATE TABLE ticks (ts TIMESTAMP, sym SYMBOL, px DOUBLE, qty BIGINT)")
    rows = []
    for i in range(1500):
        for k, s in enumerate(SYMS):
            px = 100 + 20 * k + i / 60 + rnd.uniform(-2, 2)
            rows.append(f"({1704187800_000_000_000 + i * 1_000_000_000 + k}, '{s}', {px:.4f}, {rnd.randint(1, 500)})")
    http(url, "/query", "INSERT INTO ticks VALUES " + ",".join(rows))
    http(url, "/query", "CREATE TABLE n (i BIGINT)")
    http(url, "/query", "INSERT INTO n VALUES " + ",".join(f"({i})" for i in range(1000)))
    yield url
    proc.terminate()
    proc.wait(timeout=30)


@pytest.fixture(scope="module")
def driver(base):
    o = webdriver.ChromeOptions()
    o.binary_location = CHROMIUM
    for flag in ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync",
                 "--window-size=1440,960"]:
        o.add_argument(flag)
    o.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    d = webdriver.Chrome(options=o, service=Service(DRIVER))
    SHOTS.mkdir(parents=True, exist_ok=True)
    d.get(base + "/console")
    # No key yet: the first request for data is refused and the key dialog opens.
    WebDriverWait(d, 15).until(lambda d: d.find_element(By.ID, "key-dialog").get_attribute("open") is not None)
    d.find_element(By.ID, "key-input").send_keys(API_KEY)
    d.find_element(By.ID, "key-save").click()
    WebDriverWait(d, 15).until(lambda d: len(d.find_elements(By.CSS_SELECTOR, "#tables li[data-table]")) == 2)
    yield d
    errors = [e for e in d.get_log("browser") if e["level"] == "SEVERE" and "status of 40" not in e["message"]]
    d.quit()
    assert errors == [], f"JavaScript errors in the console: {errors}"


EDITOR_TEXT = "return ZV.EditorView.findFromDOM(document.querySelector('.cm-editor')).state.doc.toString()"


def run(d, sql):
    """Type `sql` into the editor as a user would (line by line, closing completion popups) and
    run it with Ctrl-Enter; the status line and the text the editor held (its own indentation
    included)."""
    ed = d.find_element(By.CSS_SELECTOR, ".cm-content")
    ed.click()
    ed.send_keys(Keys.CONTROL, "a")
    ed.send_keys(Keys.DELETE)
    for i, line in enumerate(sql.split("\n")):
        if i:
            ed.send_keys(Keys.ENTER)
        ed.send_keys(line)
        ed.send_keys(Keys.ESCAPE)
    typed = d.execute_script(EDITOR_TEXT)
    # Brackets and quotes the editor closed were typed over; Enter may have indented.
    assert [x.strip() for x in typed.split("\n")] == [x.strip() for x in sql.split("\n")], typed
    d.execute_script("document.getElementById('status').textContent = ''")
    ed.send_keys(Keys.CONTROL, Keys.ENTER)
    WebDriverWait(d, 30).until(lambda d: d.find_element(By.ID, "status").text not in ("", "running…"))
    return d.find_element(By.ID, "status").text, typed


def grid(d):
    """The grid's header names and its rows as text."""
    heads = [th.text.split("\n")[0] for th in d.find_elements(By.CSS_SELECTOR, "#grid th")][1:]
    rows = d.execute_script(
        "return [...document.querySelectorAll('#grid tbody tr')].map(tr => [...tr.children].map(td => td.textContent))")
    return heads, rows


def as_text(v, type_):
    if v is None:
        return "null"
    if type_.startswith("TIMESTAMP") and isinstance(v, str):
        return v.replace("T", " ").rstrip("Z")
    return str(v)


def test_a_typed_query_answers_as_the_http_door(driver, base):
    sql = "SELECT sym, count(*) AS n, round(avg(px), 4) AS avg_px, max(ts) AS last_ts FROM ticks GROUP BY sym ORDER BY sym"
    status, _ = run(driver, sql)
    assert status.startswith("3 rows"), status
    heads, rows = grid(driver)
    want = json.loads(http(base, "/query", sql))
    assert heads == [c["name"] for c in want["columns"]]
    types = [c["type"] for c in want["columns"]]
    assert [r[1:] for r in rows] == [[as_text(v, t) for v, t in zip(row, types)] for row in want["data"]]
    assert [r[0] for r in rows] == ["1", "2", "3"]
    driver.save_screenshot(str(SHOTS / "grid.png"))


def test_pages_through_a_million_rows(driver, base):
    sql = "SELECT a.i * 1000 + b.i AS k, a.i AS hi FROM n a CROSS JOIN n b ORDER BY k"
    status, _ = run(driver, sql)
    assert status.startswith("1,000,000 rows"), status
    rng = driver.find_element(By.ID, "range")
    assert rng.text == "1–1,000 of 1,000,000"
    # The browser holds one page, never the result.
    assert len(grid(driver)[1]) == 1000
    driver.find_element(By.ID, "next").click()
    WebDriverWait(driver, 15).until(lambda d: rng.text == "1,001–2,000 of 1,000,000")
    _, rows = grid(driver)
    assert rows[0] == ["1,001", "1000", "1"] and rows[-1] == ["2,000", "1999", "1"]
    driver.find_element(By.ID, "last").click()
    WebDriverWait(driver, 15).until(lambda d: rng.text == "999,001–1,000,000 of 1,000,000")
    _, rows = grid(driver)
    assert rows[-1] == ["1,000,000", "999999", "999"]
    assert driver.find_element(By.ID, "next").get_attribute("disabled") is not None
    driver.find_element(By.ID, "prev").click()
    WebDriverWait(driver, 15).until(lambda d: rng.text == "998,001–999,000 of 1,000,000")
    driver.save_screenshot(str(SHOTS / "paging.png"))


def chart_series(d):
    return d.execute_script(
        "return [...document.querySelectorAll('#chart-area .uplot')].map(u => ({title: (u.querySelector('.u-title')"
        " || {}).textContent || '', series: [...u.querySelectorAll('.u-legend .u-series .u-label')]"
        ".map(l => l.textContent)}))")


def test_charts_xbar_bars_per_symbol(driver):
    sql = ("SELECT xbar(INTERVAL '1 minute', ts) AS bar, sym, first(px) AS open, max(px) AS high, "
           "min(px) AS low, last(px) AS close, sum(qty) AS volume FROM ticks GROUP BY bar, sym ORDER BY bar, sym")
    status, _ = run(driver, sql)
    assert status.startswith("75 rows"), status
    driver.find_element(By.CSS_SELECTOR, "[data-tab=chart]").click()
    WebDriverWait(driver, 15).until(lambda d: len(d.find_elements(By.CSS_SELECTOR, "#chart-area canvas")) == 3)
    assert Select(driver.find_element(By.ID, "chart-kind")).first_selected_option.text == "Candlestick"
    charts = chart_series(driver)
    assert [c["title"] for c in charts] == SYMS
    assert all(c["series"][1:] == ["open", "high", "low", "close"] for c in charts)
    # Candle bodies are drawn: the canvas holds pixels of the up or down colour.
    painted = driver.execute_script("""
        const c = document.querySelector('#chart-area canvas');
        const px = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
        let n = 0;
        for (let i = 0; i < px.length; i += 4) if (px[i + 3] && Math.abs(px[i] - px[i + 1]) > 80) n++;
        return n;""")
    assert painted > 500, painted
    driver.save_screenshot(str(SHOTS / "candles.png"))
    Select(driver.find_element(By.ID, "chart-kind")).select_by_visible_text("Line")
    Select(driver.find_element(By.ID, "chart-y")).deselect_all()
    Select(driver.find_element(By.ID, "chart-y")).select_by_visible_text("close")
    WebDriverWait(driver, 15).until(lambda d: len(d.find_elements(By.CSS_SELECTOR, "#chart-area canvas")) == 1)
    assert chart_series(driver)[0]["series"][1:] == SYMS
    driver.save_screenshot(str(SHOTS / "lines.png"))
    driver.find_element(By.CSS_SELECTOR, "[data-tab=grid]").click()


def test_an_error_points_at_its_line_and_column(driver, base):
    status, typed = run(driver, "SELECT sym,\nnosuch\nFROM ticks")
    want = json.loads(urllib_error(base, typed))["error"]
    assert want["line"] == 2
    assert status == want["code"]
    shown = driver.find_element(By.ID, "error").text
    assert want["message"] in shown and f"column {want['column']}" in shown
    marked = driver.execute_script("return [...document.querySelectorAll('.cm-lintRange-error')].map(e => e.textContent)")
    assert marked == ["nosuch"]
    driver.save_screenshot(str(SHOTS / "error.png"))


def urllib_error(base, sql):
    try:
        http(base, "/query", sql)
    except urllib.error.HTTPError as e:
        return e.read().decode()
    raise AssertionError("the query was expected to fail")


def test_live_ingest_and_metrics(driver, base):
    stop = threading.Event()

    def ingest():
        t = 1704200000_000_000_000
        while not stop.is_set():
            rows = ",".join(f"({t + i}, 'LIVE', 1.5, {i})" for i in range(500))
            t += 1000
            http(base, "/query", "INSERT INTO ticks VALUES " + rows)
            time.sleep(0.05)

    th = threading.Thread(target=ingest, daemon=True)
    th.start()
    try:
        WebDriverWait(driver, 20).until(lambda d: d.execute_script(
            "const r = document.querySelector('#tables li[data-table=ticks] .rate'); return r && r.textContent.endsWith('/s')"))
        stats = dict(zip([e.text for e in driver.find_elements(By.CSS_SELECTOR, "#live dt")],
                         [e.text for e in driver.find_elements(By.CSS_SELECTOR, "#live dd")]))
        assert stats["memory"].endswith("MiB") and "connections" in stats
    finally:
        stop.set()
        th.join()


def test_dark_and_light_themes(driver):
    html = driver.find_element(By.TAG_NAME, "html")
    first = html.get_attribute("data-theme")
    driver.find_element(By.ID, "theme").click()
    assert html.get_attribute("data-theme") == ("light" if first == "dark" else "dark")
    bg = driver.execute_script("return getComputedStyle(document.body).backgroundColor")
    driver.save_screenshot(str(SHOTS / f"theme-{html.get_attribute('data-theme')}.png"))
    driver.find_element(By.ID, "theme").click()
    assert html.get_attribute("data-theme") == first
    assert driver.execute_script("return getComputedStyle(document.body).backgroundColor") != bg
    driver.save_screenshot(str(SHOTS / f"theme-{first}.png"))


def test_assets_are_compressed_versioned_and_locked_down(base):
    req = urllib.request.Request(base + "/console/vendor.js", headers={"Accept-Encoding": "gzip"})
    with urllib.request.urlopen(req) as r:
        assert r.headers["Content-Encoding"] == "gzip"
        tag = r.headers["ETag"]
        zipped = len(r.read())
    with urllib.request.urlopen(base + "/console/vendor.js") as r:
        assert zipped * 2 < len(r.read())
    req = urllib.request.Request(base + "/console/vendor.js", headers={"If-None-Match": tag})
    with pytest.raises(urllib.error.HTTPError) as e:
        urllib.request.urlopen(req)
    assert e.value.code == 304
    with urllib.request.urlopen(base + "/console") as r:
        assert "script-src 'self'" in r.headers["Content-Security-Policy"]
