// SPDX-License-Identifier: MIT
// A caveat enforcer of our own for the MetaMask Delegation Framework: approvals above a
// threshold (docs/onchain.md, "Approvals above a threshold"). Compiled to Approvals.ts by
// scripts/compile-contracts.ts; deployed by LocalNetwork.ts. The hooks' parameters are those
// of every caveat enforcer (see Enforcers.sol's header).
pragma solidity 0.8.28;

/// ApprovalEnforcer: an execution above its token's threshold needs m of n named approvers.
///
/// terms, per transfer (kind 0): m(1) ‖ n(1) ‖ n × approver(20) ‖ k × (token(20) ‖ threshold(32)),
/// 1 ≤ m ≤ n, k ≥ 0.
/// terms, per period (issue 44): 0x00 ‖ kind(1) ‖ period(8) ‖ start(8) ‖ the per-transfer terms,
/// kind 1: the threshold bounds what moves WITHOUT approvals per token per period, kind 2: per
/// token and recipient per period; period ≥ 1 s, periods counted from start (unix seconds),
/// every threshold below 2^192. (m ≥ 1, so a first byte 0x00 never was per-transfer terms.)
///
/// Per transfer, the only execution that needs no approval is a single call, default exec type, of
/// exactly `transfer(address,uint256)` (68 bytes, no native value) to a token of the terms, of at
/// most that token's threshold. Per period, it is the same shape whose amount, added to what moved
/// without approvals in the current period (for that token, or that token and recipient), stays at
/// or below the threshold; it is then counted. An approved execution is not counted: the threshold
/// bounds what no one approved (docs/decisions.md). Before `start` every execution needs approvals.
/// Every other execution (more than the threshold, a token not in the terms, any other call) needs
/// approvals: args = abi.encode(uint256 nonce, uint256 deadline,
/// (address approver, bytes signature)[]), where at least m distinct approvers of the terms
/// each sign the EIP-712 `Approval` of this delegation and this exact execution (ECDSA for an
/// address without code, ERC-1271 for one with code), the deadline (unix seconds) is not past
/// and the nonce is unused. The nonce is then spent, per caller (the DelegationManager) and
/// delegation hash: an approval is good for one execution of one delegation. The redemption
/// reverts as a whole if the execution does, and so leaves the nonce unspent.
/// Single call only, as TransferCapEnforcer: an approval names one execution, never a batch.
///
/// No one approves their own redemption (issue 41): an approval is refused when the approver is
/// the redeemer (the `msg.sender` of `redeemDelegations` the DelegationManager hands the hooks),
/// the redeemer's owner (`owner()` of a redeemer with code: a HybridDeleGator's EOA key), or an
/// account with code whose `owner()` is either of them (another smart account of the same key).
contract ApprovalEnforcer {
    bytes4 private constant TRANSFER = 0xa9059cbb;
    bytes4 private constant ERC1271_MAGIC = 0x1626ba7e;
    /// owner(): Ownable's, which a HybridDeleGator has.
    bytes4 private constant OWNER = 0x8da5cb5b;
    uint256 private constant OWNER_GAS = 30_000;
    /// secp256k1 order / 2: a larger s is the malleable twin of a valid signature.
    uint256 private constant HALF_ORDER = 0x7fffffffffffffffffffffffffffffff5d576e7357a4501ddfe92f46681b20a0;
    bytes32 private constant DOMAIN_TYPEHASH =
        keccak256("EIP712Domain(string name,string version,uint256 chainId,address verifyingContract)");
    bytes32 public constant APPROVAL_TYPEHASH =
        keccak256("Approval(bytes32 delegationHash,address target,uint256 value,bytes callData,uint256 nonce,uint256 deadline)");

    struct Approval {
        address approver;
        bytes signature;
    }

    /// Spent nonces: caller (the DelegationManager, or a wrapper enforcer) → delegation hash → nonce.
    mapping(address => mapping(bytes32 => mapping(uint256 => bool))) public spent;

    /// What moved without approvals, per period kinds: caller → delegation hash → keccak256(token ‖ recipient,
    /// zero address per token) → period index (high 64 bits) ‖ amount (low 192 bits). One slot: one write per transfer.
    mapping(address => mapping(bytes32 => mapping(bytes32 => uint256))) public unapproved;

    event ApprovalSpent(address indexed sender, bytes32 indexed delegationHash, uint256 nonce);

    function beforeAllHook(bytes calldata, bytes calldata, bytes32, bytes calldata, bytes32, address, address) external pure {}

    function beforeHook(
        bytes calldata _terms,
        bytes calldata _args,
        bytes32 _mode,
        bytes calldata _executionCallData,
        bytes32 _delegationHash,
        address,
        address _redeemer
    ) external {
        require(bytes1(_mode) == 0x00, "ApprovalEnforcer:invalid-call-type");
        require(bytes1(_mode << 8) == 0x00, "ApprovalEnforcer:invalid-execution-type");
        require(_executionCallData.length >= 52, "ApprovalEnforcer:invalid-execution-length");
        uint256 base = headerOf(_terms);
        requiredOf(_terms, base);
        if (base == 0) {
            if (!gated(_terms, 0, _executionCallData)) return;
        } else {
            (bool needs, bytes32 key, uint256 slot) = gatedInPeriod(_terms, _executionCallData, msg.sender, _delegationHash);
            if (!needs) {
                unapproved[msg.sender][_delegationHash][key] = slot;
                return;
            }
        }
        spendApprovals(_terms, base, _args, _executionCallData, _delegationHash, _redeemer);
    }

    /// m distinct approvers of the terms signed this execution, before the deadline, under an unused nonce: spent now.
    function spendApprovals(
        bytes calldata _terms,
        uint256 _base,
        bytes calldata _args,
        bytes calldata _executionCallData,
        bytes32 _delegationHash,
        address _redeemer
    ) private {
        require(_args.length != 0, "ApprovalEnforcer:not-enough-approvals");
        (uint256 nonce, uint256 deadline, Approval[] memory approvals) = abi.decode(_args, (uint256, uint256, Approval[]));
        require(approvals.length >= uint8(_terms[_base]), "ApprovalEnforcer:not-enough-approvals");
        require(block.timestamp <= deadline, "ApprovalEnforcer:expired");
        require(!spent[msg.sender][_delegationHash][nonce], "ApprovalEnforcer:nonce-used");
        bytes32 digest = approvalDigest(
            _delegationHash,
            address(bytes20(_executionCallData[0:20])),
            uint256(bytes32(_executionCallData[20:52])),
            _executionCallData[52:],
            nonce,
            deadline
        );
        checkApprovers(_terms, _base, digest, approvals, _redeemer);
        spent[msg.sender][_delegationHash][nonce] = true;
        emit ApprovalSpent(msg.sender, _delegationHash, nonce);
    }

    function afterHook(bytes calldata, bytes calldata, bytes32, bytes calldata, bytes32, address, address) external pure {}

    function afterAllHook(bytes calldata, bytes calldata, bytes32, bytes calldata, bytes32, address, address) external pure {}

    /// The EIP-712 digest an approver signs (domain: name "ApprovalEnforcer", version "1", this chain, this contract).
    function approvalDigest(
        bytes32 _delegationHash,
        address _target,
        uint256 _value,
        bytes calldata _callData,
        uint256 _nonce,
        uint256 _deadline
    ) public view returns (bytes32) {
        bytes32 structHash =
            keccak256(abi.encode(APPROVAL_TYPEHASH, _delegationHash, _target, _value, keccak256(_callData), _nonce, _deadline));
        return keccak256(abi.encodePacked(hex"1901", domainSeparator(), structHash));
    }

    function domainSeparator() public view returns (bytes32) {
        return keccak256(abi.encode(DOMAIN_TYPEHASH, keccak256("ApprovalEnforcer"), keccak256("1"), block.chainid, address(this)));
    }

    /// ERC-5267: the EIP-712 domain, for wallets and clients that read it.
    function eip712Domain()
        external
        view
        returns (bytes1, string memory, string memory, uint256, address, bytes32, uint256[] memory)
    {
        return (hex"0f", "ApprovalEnforcer", "1", block.chainid, address(this), bytes32(0), new uint256[](0));
    }

    /// Whether an execution needs approvals under these terms (see the contract's comment) whatever
    /// moved before: per-transfer terms decide it here; per period, see `needsApprovalNow`.
    function needsApproval(bytes calldata _terms, bytes calldata _executionCallData) external pure returns (bool) {
        uint256 base = headerOf(_terms);
        requiredOf(_terms, base);
        require(_executionCallData.length >= 52, "ApprovalEnforcer:invalid-execution-length");
        return gated(_terms, base, _executionCallData);
    }

    /// Whether an execution needs approvals now, redeemed by `_caller` (the DelegationManager) under
    /// `_delegationHash`: per-period terms add what moved without approvals in the current period.
    function needsApprovalNow(address _caller, bytes32 _delegationHash, bytes calldata _terms, bytes calldata _executionCallData)
        external
        view
        returns (bool needs_)
    {
        uint256 base = headerOf(_terms);
        requiredOf(_terms, base);
        require(_executionCallData.length >= 52, "ApprovalEnforcer:invalid-execution-length");
        if (base == 0) return gated(_terms, 0, _executionCallData);
        (needs_,,) = gatedInPeriod(_terms, _executionCallData, _caller, _delegationHash);
    }

    /// What moved without approvals in the current period for `_token` (and `_recipient`, per
    /// recipient; ignored per token), and when the period ends (unix seconds); (0, start) before `start`.
    function unapprovedInPeriod(address _caller, bytes32 _delegationHash, bytes calldata _terms, address _token, address _recipient)
        external
        view
        returns (uint256 spent_, uint256 periodEnd_)
    {
        uint256 base = headerOf(_terms);
        requiredOf(_terms, base);
        require(base != 0, "ApprovalEnforcer:not-per-period");
        (uint256 kind, uint256 period, uint256 start) = periodOf(_terms);
        if (block.timestamp < start) return (0, start);
        uint256 index = (block.timestamp - start) / period;
        uint256 slot = unapproved[_caller][_delegationHash][keyOf(_token, kind == 2 ? _recipient : address(0))];
        spent_ = slot >> 192 == index ? uint192(slot) : 0;
        periodEnd_ = start + (index + 1) * period;
    }

    /// Whether the execution is anything but a transfer at or below its token's threshold.
    function gated(bytes calldata _terms, uint256 _base, bytes calldata _executionCallData) private pure returns (bool) {
        (bool plain, uint256 amount, uint256 threshold) = transferOf(_terms, _base, _executionCallData);
        return !plain || amount > threshold;
    }

    /// A plain transfer of a token of the terms: its amount and the token's threshold (the first entry naming it).
    function transferOf(bytes calldata _terms, uint256 _base, bytes calldata _executionCallData)
        private
        pure
        returns (bool plain_, uint256 amount_, uint256 threshold_)
    {
        bytes calldata callData = _executionCallData[52:];
        if (uint256(bytes32(_executionCallData[20:52])) != 0 || callData.length != 68 || bytes4(callData[0:4]) != TRANSFER) return (false, 0, 0);
        address token = address(bytes20(_executionCallData[0:20]));
        for (uint256 i = _base + 2 + 20 * uint256(uint8(_terms[_base + 1])); i < _terms.length; i += 52) {
            if (address(bytes20(_terms[i:i + 20])) == token) return (true, uint256(bytes32(callData[36:68])), uint256(bytes32(_terms[i + 20:i + 52])));
        }
        return (false, 0, 0);
    }

    /// Per period: whether the execution needs approvals, and if not, the counter's key and its new value.
    function gatedInPeriod(bytes calldata _terms, bytes calldata _executionCallData, address _caller, bytes32 _delegationHash)
        private
        view
        returns (bool needs_, bytes32 key_, uint256 slot_)
    {
        (bool plain, uint256 amount, uint256 threshold) = transferOf(_terms, 18, _executionCallData);
        (uint256 kind, uint256 period, uint256 start) = periodOf(_terms);
        if (!plain || amount > threshold || block.timestamp < start) return (true, 0, 0);
        // The token pays the low 20 bytes of the recipient word: that is the recipient counted.
        address recipient = kind == 2 ? address(uint160(uint256(bytes32(_executionCallData[56:88])))) : address(0);
        key_ = keyOf(address(bytes20(_executionCallData[0:20])), recipient);
        uint256 index = (block.timestamp - start) / period;
        uint256 slot = unapproved[_caller][_delegationHash][key_];
        uint256 total = (slot >> 192 == index ? uint192(slot) : 0) + amount;
        if (total > threshold) return (true, 0, 0);
        slot_ = (index << 192) | total;
    }

    function keyOf(address _token, address _recipient) private pure returns (bytes32) {
        return keccak256(abi.encodePacked(_token, _recipient));
    }

    /// The header's kind, period and start (per-period terms only).
    function periodOf(bytes calldata _terms) private pure returns (uint256 kind_, uint256 period_, uint256 start_) {
        kind_ = uint8(_terms[1]);
        period_ = uint64(bytes8(_terms[2:10]));
        start_ = uint64(bytes8(_terms[10:18]));
    }

    /// Where the per-transfer part of the terms begins: 0, or 18 after a per-period header (checked here).
    function headerOf(bytes calldata _terms) private pure returns (uint256) {
        require(_terms.length >= 2, "ApprovalEnforcer:invalid-terms");
        if (_terms[0] != 0x00) return 0;
        require(_terms.length >= 20, "ApprovalEnforcer:invalid-terms");
        (uint256 kind, uint256 period,) = periodOf(_terms);
        require((kind == 1 || kind == 2) && period >= 1, "ApprovalEnforcer:invalid-terms");
        for (uint256 i = 20 + 20 * uint256(uint8(_terms[19])); i + 52 <= _terms.length; i += 52) {
            require(uint256(bytes32(_terms[i + 20:i + 52])) >> 192 == 0, "ApprovalEnforcer:invalid-terms");
        }
        return 18;
    }

    /// m, after checking the shape of the per-transfer part (from `_base`).
    function requiredOf(bytes calldata _terms, uint256 _base) private pure returns (uint256 m_) {
        require(_terms.length >= _base + 2, "ApprovalEnforcer:invalid-terms");
        m_ = uint8(_terms[_base]);
        uint256 n = uint8(_terms[_base + 1]);
        uint256 tokensAt = _base + 2 + 20 * n;
        require(m_ >= 1 && m_ <= n && _terms.length >= tokensAt && (_terms.length - tokensAt) % 52 == 0, "ApprovalEnforcer:invalid-terms");
    }

    /// Every approval is by a distinct approver of the terms, none the redeemer's own, with a valid signature of `digest`.
    function checkApprovers(bytes calldata _terms, uint256 _base, bytes32 _digest, Approval[] memory _approvals, address _redeemer)
        private
        view
    {
        uint256 n = uint8(_terms[_base + 1]);
        uint256 seen; // bit i: approver i of the terms has signed
        address redeemerOwner = ownerOf(_redeemer);
        for (uint256 a = 0; a < _approvals.length; ++a) {
            address approver = _approvals[a].approver;
            uint256 i = 0;
            while (i < n && address(bytes20(_terms[_base + 2 + 20 * i:_base + 22 + 20 * i])) != approver) ++i;
            require(i < n, "ApprovalEnforcer:approver-not-named");
            require(seen & (1 << i) == 0, "ApprovalEnforcer:duplicate-approver");
            seen |= 1 << i;
            require(!redeemersOwn(approver, _redeemer, redeemerOwner), "ApprovalEnforcer:approver-is-redeemer");
            require(isValidSignature(approver, _digest, _approvals[a].signature), "ApprovalEnforcer:invalid-signature");
        }
    }

    /// Whether `_approver` is the redeemer, its owner, or an account owned by either.
    function redeemersOwn(address _approver, address _redeemer, address _redeemerOwner) private view returns (bool) {
        if (_approver == _redeemer || (_redeemerOwner != address(0) && _approver == _redeemerOwner)) return true;
        address approverOwner = ownerOf(_approver);
        return approverOwner != address(0) && (approverOwner == _redeemer || approverOwner == _redeemerOwner);
    }

    /// `owner()` of an account with code (a HybridDeleGator's EOA owner), or zero: no code, no such
    /// function, a revert, or an answer that is not an address. Gas-bounded: a hostile account
    /// cannot make the check cost more than this.
    function ownerOf(address _account) public view returns (address owner_) {
        if (_account.code.length == 0) return address(0);
        (bool ok, bytes memory result) = _account.staticcall{gas: OWNER_GAS}(abi.encodeWithSelector(OWNER));
        if (!ok || result.length != 32 || uint256(bytes32(result)) >> 160 != 0) return address(0);
        owner_ = address(uint160(uint256(bytes32(result))));
    }

    /// ECDSA (65 bytes, low s) for an address without code, ERC-1271 for one with code.
    function isValidSignature(address _signer, bytes32 _digest, bytes memory _signature) private view returns (bool) {
        if (_signer.code.length == 0) {
            if (_signature.length != 65) return false;
            bytes32 r;
            bytes32 s;
            uint8 v;
            assembly {
                r := mload(add(_signature, 32))
                s := mload(add(_signature, 64))
                v := byte(0, mload(add(_signature, 96)))
            }
            if (uint256(s) > HALF_ORDER) return false;
            address recovered = ecrecover(_digest, v, r, s);
            return recovered != address(0) && recovered == _signer;
        }
        (bool ok, bytes memory result) = _signer.staticcall(abi.encodeWithSelector(ERC1271_MAGIC, _digest, _signature));
        return ok && result.length == 32 && bytes32(result) == bytes32(ERC1271_MAGIC);
    }
}
