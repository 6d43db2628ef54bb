/**
 * Every migration, in order. A migration is never edited once landed: add a new one
 * with a number above every landed one (the migrator skips ids at or below the
 * highest it has run).
 */
import { Migrator } from "effect/sql"
import foundation from "./0001_foundation.ts"
import audit from "./0002_audit.ts"
import operations from "./0010_operations.ts"
import delegations from "./0020_delegations.ts"
import marketplace from "./0030_marketplace.ts"
import anchors from "./0040_anchors.ts"
import marketplaceMandates from "./0050_marketplace_mandates.ts"
import nonceExpiryIndex from "./0060_nonce_expiry_index.ts"
import reconcilerRotation from "./0070_reconciler_rotation.ts"
import auditAppendFunction from "./0110_audit_append_function.ts"
import relayExactMatch from "./0140_relay_exact_match.ts"
import buildSharing from "./0141_build_sharing.ts"
import notificationPush from "./0170_notification_push.ts"
import budgetAlerts from "./0171_budget_alerts.ts"
import mandateRevocation from "./0180_mandate_revocation.ts"
import sponsorUsage from "./0181_sponsor_usage.ts"
import revertData from "./0183_revert_data.ts"
import auditRecipient from "./0184_audit_recipient.ts"
import chainFollower from "./0185_chain_follower.ts"
import anchorEntriesRoot from "./0190_anchor_entries_root.ts"
import auditAppendMany from "./0191_audit_append_many.ts"
import auditEntryIndexes from "./0192_audit_entry_indexes.ts"
import auditAppendAccounts from "./0193_audit_append_accounts.ts"
import relaySettlesByChain from "./0200_relay_settles_by_chain.ts"
import sponsorTotals from "./0201_sponsor_totals.ts"
import webhookUrlsAsCalled from "./0202_webhook_urls_as_called.ts"
import rateLimits from "./0252_rate_limits.ts"
import delegationRedemptions from "./0220_delegation_redemptions.ts"
import accountsPerChain from "./0250_accounts_per_chain.ts"
import sponsorshipPerChain from "./0251_sponsorship_per_chain.ts"
import permissionApprovals from "./0260_permission_approvals.ts"
import approvalRequests from "./0270_approval_requests.ts"
import x402Payments from "./0280_x402_payments.ts"
import ownerAccount from "./0290_owner_account.ts"
import grantChanges from "./0300_grant_changes.ts"
import ownerPanicKeys from "./0310_owner_panic_keys.ts"
import useropSettledNotify from "./0340_userop_settled_notify.ts"
import delegationsDelegateeIndex from "./0350_delegations_delegatee_index.ts"
import recoveryWatchCursor from "./0370_recovery_watch_cursor.ts"
import auditStoredSubtrees from "./0410_audit_stored_subtrees.ts"
import opBuildStoreOrShare from "./0420_op_build_store_or_share.ts"
import delegationLedgerFunctions from "./0430_delegation_ledger_functions.ts"
import inclusionObservedClock from "./0440_inclusion_observed_clock.ts"
import localChainIdentity from "./0480_local_chain_identity.ts"
import grantLockNoKeyUpdate from "./0490_grant_lock_no_key_update.ts"
import permissionAsks from "./0540_permission_asks.ts"
import grantMandates from "./0600_grant_mandates.ts"
import hireIdentityPolicy from "./0620_hire_identity_policy.ts"
import delegationReserveFunction from "./0650_delegation_reserve_function.ts"

export const migrations = Migrator.fromRecord({
  "0001_foundation": foundation,
  "0002_audit": audit,
  "0010_operations": operations,
  "0020_delegations": delegations,
  "0030_marketplace": marketplace,
  "0040_anchors": anchors,
  "0050_marketplace_mandates": marketplaceMandates,
  "0060_nonce_expiry_index": nonceExpiryIndex,
  "0070_reconciler_rotation": reconcilerRotation,
  "0110_audit_append_function": auditAppendFunction,
  "0140_relay_exact_match": relayExactMatch,
  "0141_build_sharing": buildSharing,
  "0170_notification_push": notificationPush,
  "0171_budget_alerts": budgetAlerts,
  "0180_mandate_revocation": mandateRevocation,
  "0181_sponsor_usage": sponsorUsage,
  "0183_revert_data": revertData,
  "0184_audit_recipient": auditRecipient,
  "0185_chain_follower": chainFollower,
  "0190_anchor_entries_root": anchorEntriesRoot,
  "0191_audit_append_many": auditAppendMany,
  "0192_audit_entry_indexes": auditEntryIndexes,
  "0193_audit_append_accounts": auditAppendAccounts,
  "0200_relay_settles_by_chain": relaySettlesByChain,
  "0201_sponsor_totals": sponsorTotals,
  "0202_webhook_urls_as_called": webhookUrlsAsCalled,
  "0252_rate_limits": rateLimits,
  "0220_delegation_redemptions": delegationRedemptions,
  "0250_accounts_per_chain": accountsPerChain,
  "0251_sponsorship_per_chain": sponsorshipPerChain,
  "0260_permission_approvals": permissionApprovals,
  "0270_approval_requests": approvalRequests,
  "0280_x402_payments": x402Payments,
  "0290_owner_account": ownerAccount,
  "0300_grant_changes": grantChanges,
  "0310_owner_panic_keys": ownerPanicKeys,
  "0340_userop_settled_notify": useropSettledNotify,
  "0350_delegations_delegatee_index": delegationsDelegateeIndex,
  "0370_recovery_watch_cursor": recoveryWatchCursor,
  "0410_audit_stored_subtrees": auditStoredSubtrees,
  "0420_op_build_store_or_share": opBuildStoreOrShare,
  "0430_delegation_ledger_functions": delegationLedgerFunctions,
  "0440_inclusion_observed_clock": inclusionObservedClock,
  "0480_local_chain_identity": localChainIdentity,
  "0490_grant_lock_no_key_update": grantLockNoKeyUpdate,
  "0540_permission_asks": permissionAsks,
  "0600_grant_mandates": grantMandates,
  "0620_hire_identity_policy": hireIdentityPolicy,
  "0650_delegation_reserve_function": delegationReserveFunction
})
