/**
 * Signing a browser in when a token is configured: GET /login shows a form, POST
 * /login checks the token (constant-time) and sets the HttpOnly, SameSite=Strict
 * session cookie, POST /logout clears it. Scripts skip all this and send
 * `Authorization: Bearer <token>` on every request.
 */
import { html } from "../Html.ts"
import { redirect, respond } from "../Http.ts"
import { page } from "../Layout.ts"
import { safeNext, secretEquals, signInCookie, signOutCookie } from "../Security.ts"

/** The sign-in page (status 401 when shown in place of a protected page). */
export const loginPage = (next: string, status = 200, failed = false): Response =>
  respond(page({
    title: "Sign in",
    section: "none",
    notice: failed ? { kind: "error", text: "That token is not right." } : undefined,
    body: html`<div class="card login"><h1>Sign in</h1>
<p class="muted small">This dashboard needs the token in <code>ROSTER_DASHBOARD_TOKEN</code>. You stay signed in for 7 days in this browser.</p>
<form method="post" action="/login"><input type="hidden" name="next" value="${safeNext(next)}">
<label for="token" class="small">Token</label><input id="token" name="token" type="password" autocomplete="current-password" autofocus required>
<button type="submit" class="primary">Sign in</button></form></div>`
  }), status)

/** POST /login: form fields `token` and `next`. */
export const login = async (req: Request, token: string): Promise<Response> => {
  const form = await req.formData().catch(() => undefined)
  const given = form?.get("token")
  const next = safeNext(typeof form?.get("next") === "string" ? (form.get("next") as string) : null)
  if (typeof given !== "string" || !secretEquals(given.trim(), token)) return loginPage(next, 401, true)
  return redirect(next, undefined, { "set-cookie": signInCookie(token) })
}

/** POST /logout */
export const logout = (): Response => redirect("/login", undefined, { "set-cookie": signOutCookie })
