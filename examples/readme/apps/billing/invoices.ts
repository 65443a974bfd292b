/**
 * Stand-ins for an application's own invoice code, so the README's billing app runs:
 * render a PDF, send it by email with the provider's idempotency key.
 */
import { Effect } from "effect"

/** Renders an invoice (here: a short text standing in for the PDF). */
export const renderPdf = (invoiceId: string) => Effect.succeed(`%PDF invoice ${invoiceId}`)

/** Emails an invoice; a real provider would dedupe on `idempotencyKey`. */
export const emailInvoice = (invoiceId: string, pdf: string, options: { readonly idempotencyKey: string }) =>
  Effect.as(
    Effect.log(`emailing invoice ${invoiceId} (${pdf.length} bytes, idempotency key ${options.idempotencyKey})`),
    { messageId: `msg-${options.idempotencyKey}` }
  )
