"""The page's own modules, run in the browser: the Markdown renderer and the run fold."""

from __future__ import annotations

from typing import Any

from api.http.routes.page import bundle
from tests.e2e.web.conftest import Browser, StartWeb
from tests.e2e.web.harness import System


async def module_page(system: System, browser: Any) -> Any:
    """A page of this origin (so the CSP applies) that can import the page's modules."""
    page = await browser.page()
    await page.goto(f"{system.base}/")
    await page.locator(".signin").wait_for()
    return page


def url(name: str) -> str:
    return f"/static/{bundle().build}/js/{name}.js"


async def test_markdown_makes_only_safe_elements_and_text(
    start_web: StartWeb, browser: Browser
) -> None:
    system = await start_web()
    page = await module_page(system, browser)
    result = await page.evaluate(
        """async (src) => {
          const { render } = await import(src);
          const box = document.createElement('div');
          box.append(render([
            '# Title <img src=x onerror="window.__pwned=1">',
            '',
            'Text with <script>window.__pwned=2</script> **bold** _it_ `code` ~~old~~',
            '[ok](https://example.org/a) [bad](javascript:window.__pwned=3)',
            '[data](data:text/html,<script>alert(1)</script>) <a href="javascript:x">raw</a>',
            'snake_case_word and 2 * 3 * 4 stay as they are',
            '',
            '| a | b |',
            '|---|---|',
            '| <b>1</b> | 2 |',
            '',
            '> quoted <iframe src="https://example.org"></iframe>',
            '',
            '1. one',
            '2. two',
            '',
            '```html',
            '<script>window.__pwned=4</script>',
            '```',
          ].join('\\n')));
          document.body.append(box);
          const tags = [...box.querySelectorAll('*')].map((e) => e.tagName.toLowerCase());
          const links = [...box.querySelectorAll('a')].map((a) => [a.href, a.target, a.rel]);
          const attrs = [...box.querySelectorAll('*')]
            .flatMap((e) => [...e.attributes].map((a) => a.name));
          return { tags: [...new Set(tags)].sort(), links, attrs: [...new Set(attrs)].sort(),
                   text: box.textContent, pwned: window.__pwned ?? null };
        }""",
        url("markdown"),
    )
    assert set(result["tags"]) <= {
        "h3", "p", "strong", "em", "code", "del", "a", "br", "div", "table", "thead",
        "tbody", "tr", "th", "td", "blockquote", "ol", "li", "pre",
    }, result["tags"]  # fmt: skip
    # Only http(s) URLs became links (the iframe's URL is plain text that autolinks).
    assert [href for href, *_ in result["links"]] == [
        "https://example.org/a",
        "https://example.org/",
    ]
    assert all(rest == ["_blank", "noopener noreferrer"] for _, *rest in result["links"])
    assert set(result["attrs"]) <= {"href", "target", "rel", "class"}, result["attrs"]
    text = result["text"]
    for visible in (
        '<img src=x onerror="window.__pwned=1">',
        "<script>window.__pwned=2</script>",
        "[bad](javascript:window.__pwned=3)",
        '<a href="javascript:x">raw</a>',
        "snake_case_word and 2 * 3 * 4",
        '<iframe src="https://example.org"></iframe>',
    ):
        assert visible in text
    assert result["pwned"] is None
    await browser.shot(page)


async def test_only_markers_in_citation_position_become_citations(
    start_web: StartWeb, browser: Browser
) -> None:
    """The page links a marker as the server checks it: indexes, values, lists of numbers
    not all shown and code stay text."""
    system = await start_web()
    page = await module_page(system, browser)
    result = await page.evaluate(
        """async (src) => {
          const { render } = await import(src);
          const cite = (n) => {
            if (n > 2) return null;
            const s = document.createElement('sup');
            s.textContent = `(${n})`;
            return s;
          };
          const box = document.createElement('div');
          box.append(render([
            'Paris is big [1]. Use arr[1] or a[0][1] here.',
            'The list [1, 2, 3] has three items; both say so [1, 2].',
            'Set x = [1] and it returns [2]. See [1][2] and [1], [2]. Glued.[2]',
            'In code `y[1]` and [7] stay.',
          ].join('\\n'), { cite }));
          document.body.append(box);
          return { cites: [...box.querySelectorAll('sup')].map((e) => e.textContent),
                   text: box.textContent };
        }""",
        url("markdown"),
    )
    assert result["cites"] == ["(1)", "(1)", "(2)", "(1)", "(2)", "(1)", "(2)", "(2)"]
    for kept in ("arr[1]", "a[0][1]", "[1, 2, 3]", "x = [1]", "returns [2]", "y[1]", "[7]"):
        assert kept in result["text"]
    await browser.shot(page)


async def test_the_fold_drops_a_retried_step_and_splits_superseded_drafts(
    start_web: StartWeb, browser: Browser
) -> None:
    system = await start_web()
    page = await module_page(system, browser)
    result = await page.evaluate(
        """async (src) => {
          const { RunModel } = await import(src);
          const m = new RunModel('r1');
          const ev = (type, extra) => m.apply({ type, run_id: 'r1', ...extra });
          ev('run_started', { question: 'q', step_id: 's0' });
          ev('answer', { step_id: 's1', delta: 'Half of a ' });
          ev('reasoning', { step_id: 's1', delta: 'thinking' });
          ev('step_retry', { step_id: 's1', delivery: 2 });
          const afterRetry = [m.answer, m.reasoningText];
          ev('answer', { step_id: 's1', delta: 'First draft.' });
          ev('critique', { step_id: 's2', verdict: 'REVISE', reason: 'wrong' });
          ev('answer', { step_id: 's3', delta: 'Second ' });
          ev('answer', { step_id: 's3', delta: 'draft.' });
          ev('verdict', { step_id: 's4', verdict: 'fail', reasons: ['still wrong'] });
          ev('answer', { step_id: 's5', delta: 'Final.' });
          ev('critique', { step_id: 's6', verdict: 'REVISE', reason: 'too late' });
          ev('done', { step_id: 's7', status: 'done', answer: 'Final.' });
          return {
            afterRetry,
            drafts: m.drafts.map(
              (d) => [d.parts.map((p) => p.text).join(''), d.superseded && d.superseded.by]),
            answer: m.answer, status: m.status,
            kinds: m.timeline.map((e) => e.kind),
          };
        }""",
        url("run_model"),
    )
    assert result["afterRetry"] == ["", ""]  # the retried step's partial output is gone
    assert result["drafts"] == [
        ["First draft.", "critic"],
        ["Second draft.", "verifier"],
        ["Final.", None],  # a REVISE with no answer after it supersedes nothing
    ]
    assert result["answer"] == "Final." and result["status"] == "done"
    assert result["kinds"] == ["retry", "critique", "verdict", "critique"]
    await browser.shot(page)


async def test_the_fold_splits_drafts_on_draft_superseded_and_on_a_later_attempt(
    start_web: StartWeb, browser: Browser
) -> None:
    system = await start_web()
    page = await module_page(system, browser)
    result = await page.evaluate(
        """async (src) => {
          const { RunModel } = await import(src);
          const m = new RunModel('r1');
          const ev = (type, extra) => m.apply({ type, run_id: 'r1', ...extra });
          ev('answer', { step_id: 's1', delta: 'One.', attempt: 0 });
          ev('draft_superseded', { step_id: 's2', attempt: 0, reason: 'fact-check failed' });
          ev('answer', { step_id: 's3', delta: 'Two.', attempt: 1 });
          // A client that missed the event (it joined late) still splits on the attempt.
          ev('answer', { step_id: 's4', delta: 'Three.', attempt: 2 });
          ev('critique', { step_id: 's5', verdict: 'REVISE', reason: 'too vague' });
          ev('draft_superseded', { step_id: 's5', attempt: 2, reason: 'too vague' });
          ev('answer', { step_id: 's6', delta: 'Four.', attempt: 3 });
          return {
            drafts: m.drafts.map((d) => [
              d.parts.map((p) => p.text).join(''),
              d.superseded && d.superseded.by,
              d.superseded && d.superseded.reason]),
            answer: m.answer,
          };
        }""",
        url("run_model"),
    )
    assert result["drafts"] == [
        ["One.", "judge", "fact-check failed"],
        ["Two.", "judge", ""],
        ["Three.", "critic", "too vague"],  # the critique names who sent it back
        ["Four.", None, None],
    ]
    assert result["answer"] == "Four."
    await browser.shot(page)


async def test_an_unreadable_verdict_is_shown_unknown_and_the_outcome_says_so(
    start_web: StartWeb, browser: Browser
) -> None:
    system = await start_web()
    page = await module_page(system, browser)
    result = await page.evaluate(
        """async ([modelSrc, viewSrc]) => {
          const { RunModel } = await import(modelSrc);
          const { RunView } = await import(viewSrc);
          const outcomeOf = (events) => {
            const m = new RunModel('r1');
            for (const e of events) m.apply({ run_id: 'r1', ...e });
            return [m, new RunView(m, {}).outcome()];
          };
          const [m, unknown] = outcomeOf([
            { type: 'answer', step_id: 's1', delta: 'It takes 35 minutes.', attempt: 0 },
            { type: 'critique', step_id: 's2', verdict: 'UNKNOWN',
              reason: 'unreadable critique: OK if' },
            { type: 'done', step_id: 's3', status: 'done', answer: 'It takes 35 minutes.',
              verified: null, verified_reason: 'critic UNKNOWN: unreadable critique: OK if' },
          ]);
          const [, verified] = outcomeOf([
            { type: 'done', step_id: 's1', status: 'done', answer: '225',
              verified: true, verified_reason: 'critic OK: recomputed' },
          ]);
          const [, refuted] = outcomeOf([
            { type: 'done', step_id: 's1', status: 'done', answer: '35',
              verified: false, verified_reason: 'verifier needs_revision: recomputed 225' },
          ]);
          const [, single] = outcomeOf([
            { type: 'done', step_id: 's1', status: 'done', answer: '225',
              verified: null, verified_reason: 'not judged: single mode has no judges' },
          ]);
          return {
            drafts: m.drafts.map((d) => d.superseded), modelVerified: m.verified,
            unknown, verified, refuted, single,
          };
        }""",
        [url("run_model"), url("run_view")],
    )
    assert result["drafts"] == [None]  # an unknown verdict sends nothing back
    assert result["modelVerified"] is None
    assert result["unknown"] == "Verification unknown: critic UNKNOWN: unreadable critique: OK if"
    assert result["verified"] == "Verified: critic OK: recomputed"
    assert result["refuted"] == "Not verified: verifier needs_revision: recomputed 225"
    assert result["single"] == ""  # single mode: nothing to say
    await browser.shot(page)
