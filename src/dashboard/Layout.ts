/**
 * The page shell every dashboard page shares: head, navigation, notices and the one
 * stylesheet, inline so there is no asset route and no build step. Pages carry no
 * script at all (the Content-Security-Policy forbids it); actions are plain POST forms
 * and the overview refreshes itself with a meta refresh when asked.
 */
import { html, raw, type Fragment, type Html } from "./Html.ts"

/** The sections of the navigation. */
export type Section = "overview" | "executions" | "schedules" | "none"

/** Options of a page. */
export interface PageOptions {
  readonly title: string
  readonly section: Section
  readonly body: Fragment
  /** A notice shown above the content (escaped). */
  readonly notice?: { readonly kind: "ok" | "error"; readonly text: string } | undefined
  /** Reload the page every this many seconds. */
  readonly refreshSeconds?: number | undefined
  /** Show the sign-out button (a token is configured). */
  readonly signedIn?: boolean | undefined
}

const styles = raw(`
:root { --fg:#1f2328; --muted:#656d76; --line:#d8dee4; --bg:#f6f8fa; --card:#fff; --accent:#0969da;
  --ok:#1a7f37; --okbg:#dafbe1; --bad:#cf222e; --badbg:#ffebe9; --warn:#9a6700; --warnbg:#fff8c5;
  --info:#0550ae; --infobg:#ddf4ff; --off:#57606a; --offbg:#eaeef2; }
* { box-sizing: border-box; }
body { margin:0; font:14px/1.5 system-ui,-apple-system,"Segoe UI",Roboto,Helvetica,Arial,sans-serif; color:var(--fg); background:var(--bg); }
a { color:var(--accent); text-decoration:none; } a:hover { text-decoration:underline; }
header { background:#24292f; color:#fff; }
header .bar { max-width:1240px; margin:0 auto; padding:0 20px; display:flex; align-items:center; gap:24px; height:52px; }
header .brand { font-weight:700; font-size:17px; color:#fff; letter-spacing:.2px; }
header nav a { color:#d0d7de; padding:15px 2px; margin-right:14px; border-bottom:2px solid transparent; }
header nav a.active, header nav a:hover { color:#fff; border-bottom-color:#fd8c73; text-decoration:none; }
header .spacer { flex:1; }
header form button { background:transparent; color:#d0d7de; border:1px solid #57606a; }
main { max-width:1240px; margin:0 auto; padding:20px; }
h1 { font-size:22px; margin:4px 0 16px; font-weight:600; word-break:break-all; }
h2 { font-size:16px; margin:0 0 10px; font-weight:600; }
.card { background:var(--card); border:1px solid var(--line); border-radius:8px; padding:16px; margin-bottom:16px; overflow-x:auto; }
.grid { display:grid; grid-template-columns:repeat(auto-fit,minmax(300px,1fr)); gap:16px; }
.grid .card { margin-bottom:0; }
.stats { display:grid; grid-template-columns:repeat(auto-fit,minmax(200px,1fr)); gap:16px; margin-bottom:16px; }
.stats .card { margin-bottom:0; }
table { border-collapse:collapse; width:100%; }
th, td { text-align:left; padding:7px 10px; border-bottom:1px solid var(--line); vertical-align:top; }
th { white-space:nowrap; font-size:12px; text-transform:uppercase; letter-spacing:.4px; color:var(--muted); font-weight:600; background:#fafbfc; }
tr:last-child td, tr:last-child th { border-bottom:none; }
table.queues th, table.queues td { padding:7px 6px; }
td.num, th.num { text-align:right; font-variant-numeric:tabular-nums; white-space:nowrap; }
.kv th { width:170px; text-transform:none; letter-spacing:0; font-size:13px; background:transparent; }
.mono, code, pre { font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace; font-size:12.5px; }
pre { background:#f6f8fa; border:1px solid var(--line); border-radius:6px; padding:10px 12px; margin:0; white-space:pre-wrap; word-break:break-word; max-height:480px; overflow:auto; }
.muted { color:var(--muted); } .small { font-size:12px; } .nowrap { white-space:nowrap; }
.badge { display:inline-block; padding:1px 9px; border-radius:999px; font-size:12px; font-weight:600; white-space:nowrap; }
.b-queued { background:var(--infobg); color:var(--info); } .b-running { background:var(--warnbg); color:var(--warn); }
.b-waiting { background:#fbefff; color:#8250df; }
.b-succeeded { background:var(--okbg); color:var(--ok); } .b-failed { background:var(--badbg); color:var(--bad); }
.b-cancelled, .b-paused, .b-retired { background:var(--offbg); color:var(--off); }
.b-enqueued { background:var(--okbg); color:var(--ok); } .b-skipped, .b-missed { background:var(--warnbg); color:var(--warn); }
.notice { border-radius:6px; padding:10px 14px; margin-bottom:16px; border:1px solid; }
.notice.ok { background:var(--okbg); border-color:#aceebb; } .notice.error { background:var(--badbg); border-color:#ffcecb; }
button, .button { font:inherit; font-size:13px; padding:5px 12px; border-radius:6px; border:1px solid var(--line); background:#f6f8fa; color:var(--fg); cursor:pointer; }
button:hover { background:#eef1f4; } button.primary { background:#1f883d; border-color:#1a7f37; color:#fff; }
button.danger { color:var(--bad); } button.danger:hover { background:var(--badbg); }
form.inline { display:inline; margin:0; } .actions { display:flex; gap:8px; flex-wrap:wrap; align-items:center; }
td .actions { flex-wrap:nowrap; }
.filters { display:flex; gap:10px; flex-wrap:wrap; align-items:end; }
.filters label { display:flex; flex-direction:column; font-size:12px; color:var(--muted); gap:3px; }
input, select { font:inherit; font-size:13px; padding:5px 8px; border:1px solid var(--line); border-radius:6px; background:#fff; min-width:160px; }
.pager { display:flex; gap:16px; margin-top:12px; }
.stat { font-size:26px; font-weight:600; font-variant-numeric:tabular-nums; }
.bars { display:flex; align-items:flex-end; gap:4px; height:90px; padding-top:6px; }
.bars .col { flex:1; display:flex; flex-direction:column-reverse; min-width:10px; height:100%; background:#f3f5f7; border-radius:3px 3px 0 0; overflow:hidden; }
.bars .ok { background:#4ac26b; } .bars .bad { background:#ff8182; }
.axis { display:flex; gap:4px; font-size:11px; color:var(--muted); margin-top:4px; }
.axis span { flex:1; min-width:10px; text-align:left; white-space:nowrap; }
.legend span { display:inline-block; width:10px; height:10px; border-radius:2px; margin:0 4px 0 10px; vertical-align:middle; }
details summary { cursor:pointer; color:var(--accent); }
.log-error td { background:#fff5f5; } .log-warn td { background:#fffbea; }
.login { max-width:380px; margin:80px auto; }
.login input { width:100%; margin:8px 0 12px; }
`)

/** Renders a whole page. */
export const page = (options: PageOptions): Html => {
  const link = (section: Section, href: string, label: string) =>
    html`<a href="${href}" class="${options.section === section ? "active" : ""}">${label}</a>`
  return html`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
${options.refreshSeconds ? html`<meta http-equiv="refresh" content="${options.refreshSeconds}">` : ""}
<title>${options.title} · Roster</title><style>${styles}</style></head>
<body><header><div class="bar"><a class="brand" href="/">Roster</a>
<nav>${link("overview", "/", "Overview")}${link("executions", "/executions", "Executions")}${link("schedules", "/schedules", "Schedules")}</nav>
<span class="spacer"></span>
${options.signedIn ? html`<form class="inline" method="post" action="/logout"><button type="submit">Sign out</button></form>` : ""}
</div></header>
<main>${options.notice ? html`<div class="notice ${options.notice.kind}" role="status">${options.notice.text}</div>` : ""}${options.body}</main>
</body></html>`
}
