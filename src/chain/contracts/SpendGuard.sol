// SPDX-License-Identifier: MIT
// A grant replaced at its agent's request (docs/approvals.md, "Asking for more") carries over
// what the old grant already spent: the new grant's on-chain limits are the new totals minus
// that spend. The owner's one operation disables the old grant, asks this contract that the
// old grant's enforcer state is still exactly what those limits were computed from, and
// enables the new grant. A redemption of the old grant that lands between the build and the
// operation changes an answer here, and the whole operation reverts: the delegate can never
// hold the old spend plus the new grant's full limits.
// Compiled to SpendGuard.ts by scripts/compile-contracts.ts; deployed by LocalNetwork.ts.
pragma solidity 0.8.28;

/// SpendGuard: reverts unless every (target, call) still answers what it answered when the
/// operation was built. Stateless and permissionless (it only reads).
contract SpendGuard {
    struct Expectation {
        address target;
        bytes data;
        bytes32 answerHash;
    }

    /// @param expectations each view call and the keccak256 of the answer it must still give.
    function expectUnchanged(Expectation[] calldata expectations) external view {
        require(expectations.length > 0, "SpendGuard:nothing-to-check");
        for (uint256 i = 0; i < expectations.length; ++i) {
            (bool ok, bytes memory answer) = expectations[i].target.staticcall(expectations[i].data);
            require(ok, "SpendGuard:call-failed");
            require(keccak256(answer) == expectations[i].answerHash, "SpendGuard:state-changed");
        }
    }
}
