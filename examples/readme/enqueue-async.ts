// enqueue-async.ts — from code not written with Effect
import { Roster } from "roster"
import { sendInvoice } from "./apps/billing/jobs.ts"

const roster = await Roster.open({ db: "roster.db", jobs: [sendInvoice] })

export async function onInvoiceCreated(invoiceId: string): Promise<string> {
  const { id } = await roster.enqueue(sendInvoice, { invoiceId }, { idempotencyKey: `invoice:${invoiceId}` })
  return id
}

console.log(`execution ${await onInvoiceCreated("inv_43")}`)
await roster.close()
