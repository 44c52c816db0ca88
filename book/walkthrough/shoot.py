"""The screenshots of book/walkthrough.md: three claims walked from the front page in Debian's
chromium, the network blocked, each click the reader's (at most three to the head in the atlas).

    python -m analysis_utils book && python book/walkthrough/shoot.py

writes book/walkthrough/*.png (palette PNGs, a few tens of kB each) from book/_build/html, and
fails if a walk takes more clicks or a request leaves the machine.
"""

from __future__ import annotations

import io
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


def walk(browser, size, shots: list[str], claim: str, head: str | None, notebook_shot=False):
    context = browser.new_context(viewport={"width": size[0], "height": size[1]})
    off = []
    context.route("**/*", lambda r: r.continue_() if r.request.url.startswith(
        ("file:", "data:", "about:", "blob:")) else (off.append(r.request.url), r.abort()))
    page = context.new_page()
    page.goto((SITE / "index.html").as_uri())
    clicks = 0
    page.click("article a[href='findings.html']")  # 1: the findings
    clicks += 1
    page.locator(f"tr[id='{claim}']").scroll_into_view_if_needed()
    page.evaluate("window.scrollBy(0, -160)")
    if "findings" in shots:
        save(page, shots[shots.index("findings")] + "")
    page.click(f"tr[id='{claim}'] a")  # 2: the claim's page
    clicks += 1
    page.wait_for_selector(".claim-verdicts")
    save(page, shots[1])
    if notebook_shot:
        page.click("text=its Verdicts section >> nth=0")
        clicks += 1
        page.wait_for_load_state()
        save(page, shots[2])
    elif head:
        page.click(f"a.atlas-head:text-is('{head}') >> nth=0")  # 3: the head in the atlas
        clicks += 1
        page.wait_for_selector(f"#detail[data-selected='{head}']")
        page.wait_for_timeout(300)
        save(page, shots[2])
    assert clicks <= 3, clicks
    assert off == [], off
    context.close()


def main() -> int:
    if not (SITE / "index.html").is_file():
        print("build the book first: python -m analysis_utils book", file=sys.stderr)
        return 1
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=shutil.which("chromium"),
                                    args=["--no-sandbox"])
        walk(browser, LAPTOP, ["findings", "1-claim", "1-atlas"],
             "03-the-best-head-beats-the-nearest-mention", "3-10")
        walk(browser, PHONE, ["-", "2-claim-phone", "2-atlas-phone"],
             "02-a-head-tracks-nn-better-than-the-best-fixed-offset", "3-9")
        walk(browser, LAPTOP, ["-", "3-claim", "3-notebook-verdicts"],
             "06-pre-trained-fine-tuning-beats-random-init-fine-tuning", None,
             notebook_shot=True)
        browser.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
