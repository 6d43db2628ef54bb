import type { OperationDoc } from "./Reference.ts"

const owner = "The signer (its session)."
const nothing = "Nothing."

export const notificationsDocs: Record<string, OperationDoc> = {
  "notifications.list": {
    summary: "List notifications",
    description:
      "The signer's alerts, newest first: executed actions, declines (`danger`, linking to the audit entry), revokes, freezes. " +
      "`unreadOnly=true` for the unread ones.",
    caller: owner,
    chain: nothing
  },
  "notifications.stream": {
    summary: "Live notifications (SSE)",
    description:
      "Server-sent events: each new notification of the signer (`id:` is its sequence number), a heartbeat comment every 15 s; " +
      "reconnect with `Last-Event-ID` to replay what was missed (bounded).",
    caller: owner,
    chain: nothing
  },
  "notifications.createWebhook": {
    summary: "Register a webhook",
    description:
      "Registers an http(s) endpoint for the signer's notifications; each delivery is signed (HMAC) with the endpoint's `secret`, " +
      "answered now and never again (rotate it to get a new one). Private and loopback addresses are refused unless configured.",
    caller: owner,
    chain: nothing
  },
  "notifications.listWebhooks": {
    summary: "List webhooks",
    description: "The signer's webhook endpoints (without their secrets).",
    caller: owner,
    chain: nothing
  },
  "notifications.deleteWebhook": {
    summary: "Delete a webhook",
    description: "Removes the endpoint; pending deliveries to it stop.",
    caller: "The owner of the endpoint.",
    chain: nothing
  },
  "notifications.rotateWebhookSecret": {
    summary: "Rotate a webhook's secret",
    description: "A new signing secret, answered once; deliveries from now on are signed with it.",
    caller: "The owner of the endpoint.",
    chain: nothing
  },
  "notifications.webhookDeliveries": {
    summary: "A webhook's deliveries",
    description: "Each delivery to the endpoint: the notification, attempts, the last status code, and when it is tried next.",
    caller: "The owner of the endpoint.",
    chain: nothing
  },
  "notifications.replayWebhookDelivery": {
    summary: "Send a delivery again",
    description: "Queues the delivery to be sent again now (same body, fresh signature).",
    caller: "The owner of the endpoint.",
    chain: nothing
  },
  "notifications.readAll": {
    summary: "Mark every notification read",
    description: "Marks all of the signer's notifications read.",
    caller: owner,
    chain: nothing
  },
  "notifications.markRead": {
    summary: "Mark one notification read",
    description: "Marks the notification read and answers it.",
    caller: "The signer the notification is for.",
    chain: nothing
  }
}
