// SPDX-License-Identifier: MIT
// Guardians, social recovery and the safe address of HybridDeleGator accounts (docs/account.md,
// "Guardians and recovery"). Compiled to Recovery.ts by scripts/compile-contracts.ts; deployed
// by LocalNetwork.ts.
pragma solidity 0.8.28;

/// A Delegation Framework caveat and delegation, as the DelegationManager takes them.
struct Caveat {
    address enforcer;
    bytes terms;
    bytes args;
}

struct Delegation {
    address delegate;
    address delegator;
    bytes32 authority;
    Caveat[] caveats;
    uint256 salt;
    bytes signature;
}

/// The account's new signers, as `HybridDeleGator.updateSigners` takes them: the EOA owner
/// (zero for none) and the P-256 keys that replace every key the account holds.
struct Signers {
    address owner;
    string[] keyIds;
    uint256[] xs;
    uint256[] ys;
}

interface IDelegationManagerRedeem {
    function redeemDelegations(bytes[] calldata permissionContexts, bytes32[] calldata modes, bytes[] calldata executionCallDatas)
        external;
}

interface IHybridDeleGatorSigners {
    function updateSigners(address owner, string[] calldata keyIds, uint256[] calldata xs, uint256[] calldata ys) external;
}

interface IERC1271 {
    function isValidSignature(bytes32 hash, bytes calldata signature) external view returns (bytes4);
}

/// Recovery: m of n guardians replace an account's signers after a delay the owner can cancel.
///
/// Everything an account sets here it sets itself (`msg.sender` is the account: owner
/// operations call these functions): its guardians and threshold, the delay, its safe address.
/// Guardians approve a proposal of new signers for the account's current nonce, by their own
/// transaction (`msg.sender`) or by an EIP-712 signature anyone may submit (ECDSA for an EOA,
/// ERC-1271 for a contract guardian). The approval that reaches the threshold starts the
/// recovery: it can be executed, by anyone, once the delay has passed. Executing redeems the
/// delegation the account gave this contract, whose caveats allow only
/// `updateSigners` on the account itself (src/chain/Recovery.ts), so the account replaces its
/// own signers. Cancelling, executing and every change of the settings bump the nonce, which
/// voids every approval given before.
contract Recovery {
    uint256 public constant MIN_DELAY = 1 hours;
    uint256 public constant MAX_DELAY = 30 days;
    /// The delay of an account that never set one.
    uint256 public constant DEFAULT_DELAY = 2 days;
    uint256 public constant MAX_GUARDIANS = 16;

    bytes32 public constant APPROVAL_TYPEHASH =
        keccak256("RecoveryApproval(address account,uint256 nonce,address owner,string[] keyIds,uint256[] xs,uint256[] ys)");
    bytes32 private constant DOMAIN_TYPEHASH =
        keccak256("EIP712Domain(string name,string version,uint256 chainId,address verifyingContract)");

    address public immutable delegationManager;

    struct Settings {
        address[] guardians;
        uint64 threshold;
        uint64 delay;
        uint64 nonce;
        uint64 executeAfter;
        bytes32 started;
        address safeAddress;
    }

    mapping(address account => Settings) private settings;
    mapping(address account => mapping(address guardian => bool)) public isGuardian;
    mapping(bytes32 recoveryId => uint256) public approvals;
    mapping(bytes32 recoveryId => mapping(address guardian => bool)) public hasApproved;

    event GuardianAdded(address indexed account, address indexed guardian, uint256 threshold);
    event GuardianRemoved(address indexed account, address indexed guardian, uint256 threshold);
    event DelayChanged(address indexed account, uint256 delay);
    event SafeAddressChanged(address indexed account, address safeAddress);
    event RecoveryApproved(address indexed account, bytes32 indexed recoveryId, address indexed guardian, uint256 approvals);
    event RecoveryStarted(
        address indexed account, bytes32 indexed recoveryId, uint256 executeAfter, address owner, string[] keyIds, uint256[] xs, uint256[] ys
    );
    /// `recoveryId` zero: nothing had started, the approvals gathered so far are void.
    event RecoveryCancelled(address indexed account, bytes32 indexed recoveryId);
    event RecoveryExecuted(address indexed account, bytes32 indexed recoveryId, address owner);

    constructor(address _delegationManager) {
        delegationManager = _delegationManager;
    }

    // ---- settings, called by the account itself ----

    function addGuardian(address guardian, uint256 threshold) external {
        Settings storage s = settings[msg.sender];
        require(guardian != address(0) && guardian != msg.sender, "Recovery:invalid-guardian");
        require(!isGuardian[msg.sender][guardian], "Recovery:already-guardian");
        require(s.guardians.length < MAX_GUARDIANS, "Recovery:too-many-guardians");
        s.guardians.push(guardian);
        isGuardian[msg.sender][guardian] = true;
        setThreshold(s, threshold);
        reset(msg.sender, s);
        emit GuardianAdded(msg.sender, guardian, threshold);
    }

    function removeGuardian(address guardian, uint256 threshold) external {
        Settings storage s = settings[msg.sender];
        require(isGuardian[msg.sender][guardian], "Recovery:not-guardian");
        uint256 last = s.guardians.length - 1;
        for (uint256 i = 0; i < last; ++i) {
            if (s.guardians[i] == guardian) {
                s.guardians[i] = s.guardians[last];
                break;
            }
        }
        s.guardians.pop();
        isGuardian[msg.sender][guardian] = false;
        setThreshold(s, threshold);
        reset(msg.sender, s);
        emit GuardianRemoved(msg.sender, guardian, threshold);
    }

    function setDelay(uint256 delay) external {
        require(delay >= MIN_DELAY && delay <= MAX_DELAY, "Recovery:invalid-delay");
        Settings storage s = settings[msg.sender];
        s.delay = uint64(delay);
        reset(msg.sender, s);
        emit DelayChanged(msg.sender, delay);
    }

    /// Where withdraw-to-safety sends the account's funds (zero: none). Read by the service; not a limit.
    function setSafeAddress(address safeAddress) external {
        require(safeAddress != msg.sender, "Recovery:invalid-safe-address");
        settings[msg.sender].safeAddress = safeAddress;
        emit SafeAddressChanged(msg.sender, safeAddress);
    }

    /// The owner (any of the account's signers) stops a started recovery and voids every approval.
    function cancel() external {
        Settings storage s = settings[msg.sender];
        bytes32 started = s.started;
        bump(s);
        emit RecoveryCancelled(msg.sender, started);
    }

    // ---- guardians ----

    /// Records the approvals of `guardians` for `signers` at the account's current nonce. A
    /// guardian approves by sending this transaction itself (its signature may then be empty)
    /// or by an EIP-712 signature of `approvalDigest`. Starts the recovery at the threshold.
    function approve(address account, Signers calldata signers, address[] calldata guardians, bytes[] calldata signatures) external {
        Settings storage s = settings[account];
        require(s.threshold != 0, "Recovery:no-guardians");
        require(s.started == bytes32(0), "Recovery:already-started");
        require(guardians.length != 0 && guardians.length == signatures.length, "Recovery:invalid-approvals");
        uint256 keys = signers.keyIds.length;
        require(keys == signers.xs.length && keys == signers.ys.length, "Recovery:invalid-signers");
        require(signers.owner != address(0) || keys != 0, "Recovery:invalid-signers");
        bytes32 id = recoveryId(account, s.nonce, signers);
        if (record(account, id, guardians, signatures) >= s.threshold) start(account, s, id, signers);
    }

    /// Anyone may execute a started recovery once its delay has passed: the outcome is fixed by
    /// the guardians' approvals. `delegation` is the account's signed delegation to this contract.
    function execute(address account, Signers calldata signers, Delegation calldata delegation) external {
        Settings storage s = settings[account];
        bytes32 id = s.started;
        require(id != bytes32(0), "Recovery:not-started");
        require(recoveryId(account, s.nonce, signers) == id, "Recovery:wrong-signers");
        require(block.timestamp >= s.executeAfter, "Recovery:delay-not-elapsed");
        require(delegation.delegator == account && delegation.delegate == address(this), "Recovery:wrong-delegation");
        bump(s);

        Delegation[] memory chain = new Delegation[](1);
        chain[0] = delegation;
        bytes[] memory contexts = new bytes[](1);
        contexts[0] = abi.encode(chain);
        bytes32[] memory modes = new bytes32[](1); // single call, default exec type
        bytes[] memory executions = new bytes[](1);
        executions[0] = abi.encodePacked(
            account,
            uint256(0),
            abi.encodeCall(IHybridDeleGatorSigners.updateSigners, (signers.owner, signers.keyIds, signers.xs, signers.ys))
        );
        IDelegationManagerRedeem(delegationManager).redeemDelegations(contexts, modes, executions);
        emit RecoveryExecuted(account, id, signers.owner);
    }

    // ---- reads ----

    function settingsOf(address account)
        external
        view
        returns (
            address[] memory guardians,
            uint256 threshold,
            uint256 delay,
            uint256 nonce,
            bytes32 started,
            uint256 executeAfter,
            address safeAddress
        )
    {
        Settings storage s = settings[account];
        return (s.guardians, s.threshold, s.delay == 0 ? DEFAULT_DELAY : s.delay, s.nonce, s.started, s.executeAfter, s.safeAddress);
    }

    /// The EIP-712 struct hash of a proposal at `nonce`: the recovery's id.
    function recoveryId(address account, uint256 nonce, Signers calldata signers) public pure returns (bytes32) {
        bytes32[] memory keyIdHashes = new bytes32[](signers.keyIds.length);
        for (uint256 i = 0; i < keyIdHashes.length; ++i) {
            keyIdHashes[i] = keccak256(bytes(signers.keyIds[i]));
        }
        return keccak256(
            abi.encode(
                APPROVAL_TYPEHASH,
                account,
                nonce,
                signers.owner,
                keccak256(abi.encodePacked(keyIdHashes)),
                keccak256(abi.encodePacked(signers.xs)),
                keccak256(abi.encodePacked(signers.ys))
            )
        );
    }

    /// What a guardian signs to approve `signers` for `account` at its current nonce.
    function approvalDigest(address account, Signers calldata signers) external view returns (bytes32) {
        return toTypedDataHash(recoveryId(account, settings[account].nonce, signers));
    }

    function domainSeparator() public view returns (bytes32) {
        return keccak256(abi.encode(DOMAIN_TYPEHASH, keccak256("Recovery"), keccak256("1"), block.chainid, address(this)));
    }

    // ---- internals ----

    /// Counts each guardian's approval of recovery `id` once; returns the approvals so far.
    function record(address account, bytes32 id, address[] calldata guardians, bytes[] calldata signatures)
        private
        returns (uint256 count)
    {
        bytes32 digest = toTypedDataHash(id);
        count = approvals[id];
        for (uint256 i = 0; i < guardians.length; ++i) {
            address guardian = guardians[i];
            require(isGuardian[account][guardian], "Recovery:not-guardian");
            require(guardian == msg.sender || isValidSignature(guardian, digest, signatures[i]), "Recovery:invalid-signature");
            require(!hasApproved[id][guardian], "Recovery:already-approved");
            hasApproved[id][guardian] = true;
            emit RecoveryApproved(account, id, guardian, ++count);
        }
        approvals[id] = count;
    }

    function start(address account, Settings storage s, bytes32 id, Signers calldata signers) private {
        uint256 executeAfter = block.timestamp + (s.delay == 0 ? DEFAULT_DELAY : s.delay);
        s.started = id;
        s.executeAfter = uint64(executeAfter);
        emit RecoveryStarted(account, id, executeAfter, signers.owner, signers.keyIds, signers.xs, signers.ys);
    }

    function toTypedDataHash(bytes32 structHash) private view returns (bytes32) {
        return keccak256(abi.encodePacked("\x19\x01", domainSeparator(), structHash));
    }

    function setThreshold(Settings storage s, uint256 threshold) private {
        uint256 n = s.guardians.length;
        require(n == 0 ? threshold == 0 : threshold >= 1 && threshold <= n, "Recovery:invalid-threshold");
        s.threshold = uint64(threshold);
    }

    /// A change of the settings stops a started recovery (approved under the old ones).
    function reset(address account, Settings storage s) private {
        bytes32 started = s.started;
        bump(s);
        if (started != bytes32(0)) emit RecoveryCancelled(account, started);
    }

    function bump(Settings storage s) private {
        s.nonce += 1;
        s.started = bytes32(0);
        s.executeAfter = 0;
    }

    function isValidSignature(address signer, bytes32 digest, bytes calldata signature) private view returns (bool) {
        if (signer.code.length != 0) {
            (bool ok, bytes memory result) = signer.staticcall(abi.encodeCall(IERC1271.isValidSignature, (digest, signature)));
            return ok && result.length == 32 && bytes4(result) == IERC1271.isValidSignature.selector;
        }
        if (signature.length != 65) return false;
        bytes32 r = bytes32(signature[0:32]);
        bytes32 s = bytes32(signature[32:64]);
        uint8 v = uint8(signature[64]);
        // The lower half of the curve order only: no second valid form of one signature.
        if (uint256(s) > 0x7FFFFFFFFFFFFFFFFFFFFFFFFFFFFFFF5D576E7357A4501DDFE92F46681B20A0) return false;
        address recovered = ecrecover(digest, v, r, s);
        return recovered != address(0) && recovered == signer;
    }
}
