/**
 * Signing a browser in when a token is configured: GET /login shows a form, POST
 * /login checks the token (constant-time), starts a new session (Sessions.ts) and sets
 * its HttpOnly, SameSite=Strict cookie, POST /logout ends the session and clears the
 * cookie. `next`, where to go after signing in, is only ever a path of this dashboard
 * (`safeNext`), in the form and in the redirect. Scripts skip all this and send
 * `Authorization: Bearer <token>` on every request.
 */
import { html } from "../Html.ts"
import { redirect, respond } from "../Http.ts"
import { page } from "../Layout.ts"
import { safeNext, secretEquals, sessionCookie, signInCookie, signOutCookie } from "../Security.ts"
import type { Sessions } from "../Sessions.ts"

/** The sign-in page (status 401 when shown in place of a protected page). */
export const loginPage = (next: string | null | undefined, status = 200, failed = false): Response =>
  respond(page({
    title: "Sign in",
    section: "none",
    notice: failed ? { kind: "error", text: "That token is not right." } : undefined,
    body: html`<div class="card login"><h1>Sign in</h1>
<p class="muted small">This dashboard needs the token in <code>ROSTER_DASHBOARD_TOKEN</code>. You stay signed in for 7 days in this browser, until you sign out, or until the dashboard restarts.</p>
<form method="post" action="/login"><input type="hidden" name="next" value="${safeNext(next)}">
<label for="token" class="small">Token</label><input id="token" name="token" type="password" autocomplete="current-password" autofocus required>
<button type="submit" class="primary">Sign in</button></form></div>`
  }), status)

/** POST /login: form fields `token` and `next`; a right token starts a session at `now`. */
export const login = async (req: Request, token: string, sessions: Sessions, now: number): Promise<Response> => {
  const form = await req.formData().catch(() => undefined)
  const given = form?.get("token")
  const rawNext = form?.get("next")
  const next = safeNext(typeof rawNext === "string" ? rawNext : null)
  if (typeof given !== "string" || !secretEquals(given.trim(), token)) return loginPage(next, 401, true)
  return redirect(next, undefined, { "set-cookie": signInCookie(sessions.create(token, now), now) })
}

/** POST /logout: the session this browser holds ends, so its cookie is refused from now on, wherever it was copied. */
export const logout = (req: Request, sessions: Sessions): Response => {
  sessions.end(sessionCookie(req))
  return redirect("/login", undefined, { "set-cookie": signOutCookie })
}
