extension PageAssets {
    /// Mobile first: one column, 44 px controls, long lines wrap or scroll inside their own box;
    /// light and dark follow the system.
    static let css = ##"""
:root {
  color-scheme: light dark;
  --bg: #f6f7f9; --fg: #15181c; --muted: #5a6270; --card: #ffffff; --line: #d5d9e0;
  --accent: #1f4e79; --accent-fg: #ffffff; --code: #eef1f5;
  --low: #1e6b34; --medium: #8a5a00; --high: #b3261e;
}
@media (prefers-color-scheme: dark) {
  :root {
    --bg: #101317; --fg: #e7eaee; --muted: #9aa3b0; --card: #1a1f26; --line: #2e3640;
    --accent: #7fb3e6; --accent-fg: #0b1622; --code: #232a33;
    --low: #7bd88f; --medium: #f2c060; --high: #ff8a80;
  }
}
* { box-sizing: border-box; }
/* What scrolls into view (focus, the Approvals button) lands below the sticky header. */
html { -webkit-text-size-adjust: 100%; scroll-padding-top: 5rem; }
body {
  margin: 0; background: var(--bg); color: var(--fg);
  font: 16px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif;
  overflow-wrap: anywhere;
}
h1 { font-size: 1.2rem; margin: 0; }
h2 { font-size: 1.05rem; margin: 1rem 0 .5rem; }
[hidden] { display: none !important; }
button, input, textarea { font: inherit; color: inherit; }
button {
  min-height: 44px; min-width: 44px; padding: .5rem .9rem; border-radius: 10px;
  border: 1px solid var(--line); background: var(--card); cursor: pointer;
}
button.primary, button[type=submit] { background: var(--accent); color: var(--accent-fg); border-color: var(--accent); }
button:focus-visible, input:focus-visible, textarea:focus-visible, summary:focus-visible { outline: 3px solid var(--accent); outline-offset: 2px; }
input, textarea {
  width: 100%; min-height: 44px; padding: .6rem; border-radius: 10px;
  border: 1px solid var(--line); background: var(--card);
}
label { display: block; font-weight: 600; margin: .5rem 0 .25rem; }
pre, code { font: 13px/1.4 ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; }
pre { background: var(--code); padding: .5rem; border-radius: 8px; margin: .25rem 0; overflow-x: auto; white-space: pre-wrap; max-width: 100%; }

#login { max-width: 420px; margin: 15vh auto 0; padding: 1rem; }
#login button { width: 100%; margin-top: .75rem; }
#login-error:not(:empty), #notice:not(:empty) {
  border: 1px solid var(--high); color: var(--high); border-radius: 10px; padding: .6rem; margin: .75rem 0;
}

#bar {
  position: sticky; top: 0; z-index: 2; display: flex; flex-wrap: wrap; align-items: center; gap: .5rem;
  padding: .5rem .75rem; background: var(--card); border-bottom: 1px solid var(--line);
}
#bar h1 { margin-right: auto; }
#stream-state { font-size: .85rem; color: var(--muted); }
#approvals-count {
  display: inline-block; min-width: 1.6em; padding: 0 .35em; border-radius: 999px;
  background: var(--accent); color: var(--accent-fg); font-weight: 700; text-align: center;
}
main { padding: 0 .75rem 2rem; max-width: 760px; margin: 0 auto; }

.card { background: var(--card); border: 1px solid var(--line); border-radius: 12px; padding: .75rem; margin: .5rem 0; }
.muted { color: var(--muted); font-size: .9rem; }
.row { display: flex; flex-wrap: wrap; gap: .5rem; margin-top: .5rem; }

.approval { border-left-width: 6px; }
.approval.risk-high { border-left-color: var(--high); }
.approval.risk-medium { border-left-color: var(--medium); }
.approval.risk-low { border-left-color: var(--low); }
.risk { font-weight: 700; text-transform: uppercase; letter-spacing: .03em; font-size: .85rem; margin: 0; }
.risk-high .risk { color: var(--high); }
.risk-medium .risk { color: var(--medium); }
.risk-low .risk { color: var(--low); }
.approval .title { font-weight: 600; margin: .25rem 0; }
.approval p { margin: .25rem 0; }
.decisions button { flex: 1 1 auto; }

.profile h3 { font-size: 1rem; margin: 0; }
.state { font-size: .85rem; }
.state::before { content: "● "; }
.state-connected::before { color: var(--low); }
.state-reconnecting::before, .state-connecting::before { color: var(--medium); }
.state-failed::before, .state-disconnected::before { color: var(--high); }
.sessions { list-style: none; padding: 0; margin: .5rem 0 0; }
.sessions li { margin: .35rem 0; }
.sessions button { width: 100%; text-align: left; }

#transcript { display: flex; flex-direction: column; gap: .5rem; }
.part { border-radius: 12px; padding: .5rem .75rem; background: var(--card); border: 1px solid var(--line); max-width: 100%; }
.part .body { white-space: pre-wrap; }
.part.user { align-self: flex-end; background: var(--code); }
.part .who { display: block; font-size: .75rem; color: var(--muted); }
details > summary { min-height: 44px; display: flex; align-items: center; cursor: pointer; }
.turn-end { font-size: .85rem; color: var(--muted); text-align: center; }
#plan ul { margin: .25rem 0; padding-left: 1.2rem; }
#prompt-form { margin-top: 1rem; }
.back { margin-top: .75rem; }
#notification-list { list-style: none; padding: 0; }
"""##
}
