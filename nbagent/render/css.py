"""The stylesheet every rendering carries, scoped under one root element.

Every selector starts with ``.nbagent-out``, so the panels never restyle the rest
of a notebook. ``--jp-*`` variables come from JupyterLab / Notebook 7 themes; the
fallbacks are translucent so they read on light and dark backgrounds alike (VS Code,
nbconvert HTML, GitHub previews that keep the ``<style>``).
"""

from __future__ import annotations

from .._internal.redaction import scrub_known

__all__ = ["CSS", "ROOT_CLASS", "STYLE_TAG", "wrap"]

ROOT_CLASS = "nbagent-out"
"""The class of the element that holds a rendering (and scopes every rule of :data:`CSS`)."""

CSS = """
.nbagent-out{font-family:var(--jp-ui-font-family,system-ui,sans-serif);
 font-size:var(--jp-content-font-size1,14px);color:var(--jp-content-font-color1,inherit);
 line-height:1.45;max-width:100%}
.nbagent-out .nba-status{color:var(--jp-ui-font-color2,#888);font-style:italic;margin:2px 0 6px}
.nbagent-out .nba-stream{white-space:pre-wrap;margin:4px 0}
.nbagent-out .nba-progress{color:var(--jp-ui-font-color2,#888);margin:2px 0 6px;padding-left:18px}
.nbagent-out details.nba-thinking>summary{cursor:pointer;color:var(--jp-ui-font-color2,#888)}
.nbagent-out details.nba-round{border:1px solid var(--jp-border-color2,rgba(127,127,127,.35));
 border-radius:4px;margin:4px 0;background:var(--jp-layout-color1,transparent)}
.nbagent-out details.nba-round>summary{cursor:pointer;padding:3px 8px;
 color:var(--jp-ui-font-color1,inherit);background:var(--jp-layout-color2,rgba(127,127,127,.1))}
.nbagent-out details.nba-round.nba-failed{border-color:var(--jp-error-color1,#d32f2f)}
.nbagent-out .nba-body{padding:6px 10px}
.nbagent-out .nba-call{margin:6px 0 10px}
.nbagent-out .nba-call-head{font-family:var(--jp-code-font-family,monospace);font-weight:600}
.nbagent-out pre{font-family:var(--jp-code-font-family,monospace);
 font-size:var(--jp-code-font-size,12px);background:var(--jp-cell-editor-background,
 rgba(127,127,127,.08));color:var(--jp-content-font-color1,inherit);padding:6px 8px;
 border-radius:3px;overflow:auto;max-height:24em;white-space:pre-wrap;margin:4px 0}
.nbagent-out .nba-ok{color:var(--jp-success-color1,#388e3c)}
.nbagent-out .nba-err{color:var(--jp-error-color1,#d32f2f)}
.nbagent-out .nba-error{border-left:3px solid var(--jp-error-color1,#d32f2f);
 background:rgba(211,47,47,.12);padding:4px 8px;margin:4px 0;
 background:color-mix(in srgb,var(--jp-error-color1,#d32f2f) 12%,transparent)}
.nbagent-out .nba-approval{display:inline-block;font-size:85%;padding:0 6px;border-radius:8px;
 border:1px solid var(--jp-border-color1,rgba(127,127,127,.5));margin-left:6px}
.nbagent-out .nba-note{color:var(--jp-ui-font-color2,#888);font-size:85%}
.nbagent-out table.nba-table{border-collapse:collapse;font-size:var(--jp-code-font-size,12px)}
.nbagent-out table.nba-table th,.nbagent-out table.nba-table td{padding:2px 6px;
 border:1px solid var(--jp-border-color2,rgba(127,127,127,.3));text-align:right}
.nbagent-out table.nba-table thead th{background:var(--jp-layout-color2,rgba(127,127,127,.1))}
.nbagent-out img.nba-image{max-width:100%;height:auto}
.nbagent-out .nba-answer{margin-top:6px}
.nbagent-out .nba-footer{color:var(--jp-ui-font-color2,#888);font-size:85%;margin-top:6px;
 border-top:1px solid var(--jp-border-color2,rgba(127,127,127,.25));padding-top:3px}
.nbagent-out .nba-stopped{color:var(--jp-warn-color1,#f57c00);font-weight:600}
"""

STYLE_TAG = "<style>" + CSS + "</style>"


def wrap(inner: str) -> str:
    """``inner`` inside the root element, preceded by the stylesheet.

    Each output carries its own ``<style>``: a saved notebook, an nbconvert page or a
    GitHub preview shows it without nbagent installed. Every secret the process
    knows is redacted (a tool that returned the key must not put it in the notebook).
    """
    return f'{STYLE_TAG}<div class="{ROOT_CLASS}">{scrub_known(inner)}</div>'
