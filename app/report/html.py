"""Tiny HTML helpers: escaping by default, pre-built markup passed as `Raw`. No template engine needed."""

from __future__ import annotations

import html
from collections.abc import Iterable, Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class Raw:
    markup: str

    def __str__(self) -> str:
        return self.markup


def esc(value: object) -> str:
    return value.markup if isinstance(value, Raw) else html.escape("" if value is None else str(value))


def tag(name: str, content: object = "", **attrs: object) -> Raw:
    attributes = "".join(f' {k.rstrip("_").replace("_", "-")}="{html.escape(str(v))}"' for k, v in attrs.items()
                         if v is not None)
    body = "".join(esc(c) for c in content) if isinstance(content, list | tuple) else esc(content)
    return Raw(f"<{name}{attributes}>{body}</{name}>")


def table(headers: Sequence[object], rows: Iterable[Sequence[object]], class_: str = "data",
          numeric: Sequence[int] = ()) -> Raw:
    """A table; columns whose index is in `numeric` are right-aligned. A cell may be (value, css_class)."""
    head = "".join(f"<th{' class=num' if i in numeric else ''}>{esc(h)}</th>" for i, h in enumerate(headers))
    body = []
    for row in rows:
        cells = []
        for i, cell in enumerate(row):
            value, css = cell if isinstance(cell, tuple) else (cell, "")
            classes = " ".join(c for c in ("num" if i in numeric else "", css) if c)
            cells.append(f"<td{f' class={chr(34)}{classes}{chr(34)}' if classes else ''}>{esc(value)}</td>")
        body.append("<tr>" + "".join(cells) + "</tr>")
    return Raw(f'<table class="{class_}"><thead><tr>{head}</tr></thead><tbody>{"".join(body)}</tbody></table>')


def figure(svg: str, caption: str, id_: str | None = None) -> Raw:
    return Raw(f'<figure{f" id={chr(34)}{id_}{chr(34)}" if id_ else ""}>{svg}'
               f"<figcaption>{esc(caption)}</figcaption></figure>")


CSS = """
:root { --ink:#1d2330; --muted:#5b6475; --line:#d9dde5; --ok:#1e7a46; --bad:#b42318; --warn:#9a6700;
        --okbg:#e8f5ee; --badbg:#fdecea; --warnbg:#fff5d6; --accent:#2453a6; }
* { box-sizing: border-box; }
body { font: 14px/1.45 -apple-system, "Segoe UI", "DejaVu Sans", Arial, sans-serif; color: var(--ink);
       margin: 0; background: #f4f5f8; }
main { max-width: 1100px; margin: 0 auto; padding: 24px 32px 48px; background: #fff; }
header.top { border-bottom: 3px solid var(--accent); padding-bottom: 10px; margin-bottom: 16px; }
h1 { font-size: 24px; margin: 0 0 4px; }
h2 { font-size: 19px; margin: 32px 0 10px; padding-bottom: 4px; border-bottom: 1px solid var(--line); }
h3 { font-size: 15px; margin: 22px 0 8px; }
p.meta, .muted { color: var(--muted); }
p.meta { margin: 2px 0; font-size: 12.5px; }
nav.toc { font-size: 13px; margin: 8px 0 0; }
nav.toc a { margin-right: 14px; color: var(--accent); text-decoration: none; }
.verdict { border: 2px solid var(--ok); background: var(--okbg); border-radius: 6px; padding: 12px 16px; }
.verdict.none { border-color: var(--bad); background: var(--badbg); }
.verdict .headline { font-size: 17px; font-weight: 600; margin: 0 0 6px; }
table.data { border-collapse: collapse; width: 100%; margin: 8px 0 14px; font-size: 12.5px; }
table.data th, table.data td { border-bottom: 1px solid var(--line); padding: 4px 8px; text-align: left;
                               vertical-align: top; }
table.data th { background: #eef1f6; font-weight: 600; font-size: 12px; }
table.data td:first-child { white-space: nowrap; }
table.data td.num, table.data th.num { text-align: right; font-variant-numeric: tabular-nums; }
td.ok { color: var(--ok); font-weight: 600; } td.bad { color: var(--bad); font-weight: 600; }
td.muted { color: var(--muted); }
td.warn { color: var(--warn); }
td.okbg { background: var(--okbg); } td.badbg { background: var(--badbg); } td.warnbg { background: var(--warnbg); }
tr.recommended td { background: var(--okbg); }
.badge { display: inline-block; padding: 1px 7px; border-radius: 9px; font-size: 11.5px; font-weight: 600; }
.badge.ok { background: var(--okbg); color: var(--ok); } .badge.bad { background: var(--badbg); color: var(--bad); }
.badge.warn { background: var(--warnbg); color: var(--warn); }
figure { margin: 10px 0 18px; break-inside: avoid; page-break-inside: avoid; }
figure svg.chart { width: 100%; height: auto; display: block; }
figcaption { font-size: 12px; color: var(--muted); margin-top: 2px; }
.boards { display: grid; grid-template-columns: 1fr 1fr; gap: 4px 24px; }
.board { break-inside: avoid; page-break-inside: avoid; }
.note { font-size: 12px; color: var(--muted); }
.legend-key { font-size: 12px; color: var(--muted); }
@media print {
  body { background: #fff; font-size: 11px; }
  main { max-width: none; padding: 0; }
  h2 { break-before: page; page-break-before: always; }
  h2.first { break-before: auto; page-break-before: auto; }
  nav.toc { display: none; }
}
"""


def page(title: str, body: Sequence[object]) -> str:
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            f"<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\"><title>{esc(title)}</title>"
            f"<style>{CSS}</style></head><body><main>{''.join(esc(b) for b in body)}</main></body></html>\n")
