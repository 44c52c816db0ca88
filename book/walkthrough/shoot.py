"""The screenshots of book/walkthrough.md: three claims walked from the front page in Debian's
chromium, the network blocked, each click the reader's (at most three to the head in the atlas).

    python -m analysis_utils book && python book/walkthrough/shoot.py

writes book/walkthrough/*.png (palette PNGs, a few tens of kB each) from book/_build/html, and
fails if a walk takes more clicks or a request leaves the machine. It also writes
book/walkthrough/shots.json: for each screenshot, the claim it shows and the ledger's verdicts,
control verdicts and heads of that claim when it was taken (results/08_claims.csv), which
tests/test_frontpage.py checks against the ledger, so a screenshot cannot show a verdict the
ledger no longer gives.
"""

from __future__ import annotations

import io
import json
import shutil
import sys
from pathlib import Path

from PIL import Image
from playwright.sync_api import sync_playwright

HERE = Path(__file__).resolve().parent
SITE = HERE.parent / "_build" / "html"
LAPTOP, PHONE = (1280, 800), (390, 760)


def save(page, name: str, full: bool = False) -> None:
    img = Image.open(io.BytesIO(page.screenshot(full_page=full)))
    img.convert("RGB").quantize(colors=64, method=Image.Quantize.MEDIANCUT).save(
        HERE / f"{name}.png", optimize=True)


def walk(browser, size, shots: list[str], claim: str, head: str | None, focus: str = ""):
    """Front page -> findings index -> the claim's page (-> the head in the atlas); ``focus``:
    a selector on the claim's page to scroll into view before its screenshot (the evidence
    links, where the walkthrough's text is about them)."""
    context = browser.new_context(viewport={"width": size[0], "height": size[1]})
    off = []
    context.route("**/*", lambda r: r.continue_() if r.request.url.startswith(
        ("file:", "data:", "about:", "blob:")) else (off.append(r.request.url), r.abort()))
    page = context.new_page()
    page.goto((SITE / "index.html").as_uri())
    clicks = 0
    page.click("article a.front-findings-link")  # 1: the findings index
    clicks += 1
    page.locator(f"tr[id='{claim}']").scroll_into_view_if_needed()
    page.evaluate("window.scrollBy(0, -160)")
    if "findings" in shots:
        save(page, shots[shots.index("findings")] + "")
    page.click(f"tr[id='{claim}'] a")  # 2: the claim's page
    clicks += 1
    page.wait_for_selector(".claim-verdicts")
    if focus:
        page.evaluate("s => document.querySelector(s).scrollIntoView({block: 'center'})",
                      focus)
    save(page, shots[1])
    if head:
        page.click(f"a.atlas-head:text-is('{head}') >> nth=0")  # 3: the head in the atlas
        clicks += 1
        page.wait_for_selector(f"#detail[data-selected='{head}']")
        page.wait_for_timeout(300)
        save(page, shots[2])
    assert clicks <= 3, clicks
    assert off == [], off
    context.close()


def ledger():
    sys.path.insert(0, str(HERE.parents[1]))
    from analysis_utils.publish import claimpages

    return claimpages.ledger(HERE.parents[1])


def head_of(claim: str) -> str:
    """The first head the ledger names for ``claim`` on all-MiniLM-L6-v2 (the atlas walk's
    head)."""
    df = ledger()
    row = df[(df["id"] == claim) & df["model"].str.contains("MiniLM")].iloc[0]
    return row["heads"].split(",")[0].strip()


def record(walks: dict[str, str]) -> None:
    """``shots.json``: per screenshot, its claim and what the ledger said of it."""
    df = ledger()
    out = {}
    for shot, claim in walks.items():
        rows = df[df["id"] == claim]
        out[shot] = {"claim": claim, "models": {
            r["model"]: {k: r[k] for k in ("verdict", "control_verdict", "heads")}
            for r in rows.to_dict("records")}}
    (HERE / "shots.json").write_text(json.dumps(out, indent=1, sort_keys=True) + "\n")


def main() -> int:
    if not (SITE / "index.html").is_file():
        print("build the book first: python -m analysis_utils book", file=sys.stderr)
        return 1
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=shutil.which("chromium"),
                                    args=["--no-sandbox"])
        walk(browser, LAPTOP, ["findings", "1-claim", "1-atlas"],
             "03-the-best-head-beats-the-nearest-mention",
             head_of("03-the-best-head-beats-the-nearest-mention"))
        walk(browser, PHONE, ["-", "2-claim-phone", "2-atlas-phone"],
             "02-a-head-tracks-nn-better-than-the-best-fixed-offset",
             head_of("02-a-head-tracks-nn-better-than-the-best-fixed-offset"))
        walk(browser, LAPTOP, ["-", "3-claim"],
             "06-pre-trained-fine-tuning-beats-random-init-fine-tuning", None,
             focus=".claim-evidence")
        browser.close()
    nn, coref = ("02-a-head-tracks-nn-better-than-the-best-fixed-offset",
                 "03-the-best-head-beats-the-nearest-mention")
    record({"findings": coref, "1-claim": coref, "1-atlas": coref, "2-claim-phone": nn,
            "2-atlas-phone": nn, "3-claim": "06-pre-trained-fine-tuning-beats-random-init-"
                                           "fine-tuning"})
    return 0


if __name__ == "__main__":
    sys.exit(main())
