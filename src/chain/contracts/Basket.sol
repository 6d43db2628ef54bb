// SPDX-License-Identifier: MIT
// A caveat enforcer of our own for the MetaMask Delegation Framework (hooks as in Enforcers.sol):
// one budget per period across several tokens of one unit (USD stablecoins), so that "100 USD a
// week" means USDC, USDT and DAI together, not 100 of each (docs/onchain.md, "A basket budget").
// Compiled to Basket.ts by scripts/compile-contracts.ts; deployed by LocalNetwork.ts.
pragma solidity 0.8.28;

/// BasketPeriodEnforcer: every transfer of a basket token counts, at 1:1 after normalising its
/// decimals, against one allowance per period.
///
/// terms: periodAmount(32) ‖ periodDuration(32) ‖ startDate(32) ‖ k × (token(20) ‖ decimals(1)),
/// k ≥ 1. `periodAmount` is in the common unit of 18 decimals (100 USD = 100e18): a token of d
/// decimals counts `amount × 10^(18 − d)`, exact (d ≤ 18), so no transfer rounds down to nothing.
/// The execution must be a single call in the default exec type, with no value, to a basket
/// token, with call data exactly `transfer(address,uint256)` (68 bytes). Periods are
/// `[startDate + i·periodDuration, startDate + (i+1)·periodDuration)`; what is unspent does not
/// carry over. State is kept per (DelegationManager, delegation hash), as MetaMask's periodic
/// enforcers keep theirs, so no other caller can spend or reset a delegation's allowance.
contract BasketPeriodEnforcer {
    bytes4 private constant TRANSFER = 0xa9059cbb;
    uint256 private constant HEAD = 96;
    uint256 private constant ENTRY = 21;

    /// One storage slot: a first redemption writes one fresh slot, not two (22.1k gas less).
    struct PeriodicAllowance {
        uint64 lastPeriod;
        uint192 spentInPeriod;
    }

    /// DelegationManager → delegation hash → the current period's spend.
    mapping(address => mapping(bytes32 => PeriodicAllowance)) public allowances;

    event BasketSpent(
        address indexed sender,
        bytes32 indexed delegationHash,
        address indexed token,
        uint256 amount,
        uint256 normalised,
        uint256 period,
        uint256 spentInPeriod
    );

    function beforeAllHook(bytes calldata, bytes calldata, bytes32, bytes calldata, bytes32, address, address) external pure {}

    function beforeHook(
        bytes calldata _terms,
        bytes calldata,
        bytes32 _mode,
        bytes calldata _executionCallData,
        bytes32 _delegationHash,
        address,
        address
    ) external {
        require(bytes1(_mode) == 0x00, "BasketPeriodEnforcer:invalid-call-type");
        require(bytes1(_mode << 8) == 0x00, "BasketPeriodEnforcer:invalid-execution-type");
        (address token, uint256 normalised, uint256 amount) = transferOf(_terms, _executionCallData);
        spend(_terms, _delegationHash, token, normalised, amount);
    }

    /// Counts `normalised` against the current period's allowance of the delegation.
    function spend(bytes calldata _terms, bytes32 _delegationHash, address _token, uint256 _normalised, uint256 _amount) private {
        (uint256 periodAmount, uint256 periodDuration, uint256 startDate) = getTermsInfo(_terms);
        require(block.timestamp >= startDate, "BasketPeriodEnforcer:transfer-not-started");
        uint256 period = (block.timestamp - startDate) / periodDuration + 1;
        PeriodicAllowance storage allowance = allowances[msg.sender][_delegationHash];
        uint256 spent = allowance.lastPeriod == period ? allowance.spentInPeriod : 0;
        require(_normalised <= periodAmount - spent, "BasketPeriodEnforcer:basket-amount-exceeded");
        // period < 2^64 (a period of at least a second from a start after 1970); spent ≤ periodAmount < 2^192.
        allowance.lastPeriod = uint64(period);
        allowance.spentInPeriod = uint192(spent + _normalised);
        emit BasketSpent(msg.sender, _delegationHash, _token, _amount, _normalised, period, spent + _normalised);
    }

    /// The transfer's token, its amount in the common unit, and in the token's own units.
    function transferOf(bytes calldata _terms, bytes calldata _executionCallData)
        private
        pure
        returns (address token_, uint256 normalised_, uint256 amount_)
    {
        require(_executionCallData.length >= 52, "BasketPeriodEnforcer:invalid-execution-length");
        require(uint256(bytes32(_executionCallData[20:52])) == 0, "BasketPeriodEnforcer:invalid-value");
        bytes calldata callData = _executionCallData[52:];
        require(callData.length == 68 && bytes4(callData[0:4]) == TRANSFER, "BasketPeriodEnforcer:invalid-method");
        token_ = address(bytes20(_executionCallData[0:20]));
        (bool found, uint8 decimals) = decimalsOf(_terms, token_);
        require(found, "BasketPeriodEnforcer:token-not-in-basket");
        amount_ = uint256(bytes32(callData[36:68]));
        normalised_ = amount_ * 10 ** (18 - decimals);
    }

    function afterHook(bytes calldata, bytes calldata, bytes32, bytes calldata, bytes32, address, address) external pure {}

    function afterAllHook(bytes calldata, bytes calldata, bytes32, bytes calldata, bytes32, address, address) external pure {}

    /// The allowance, period length and first period start; reverts on terms that cannot hold a basket.
    function getTermsInfo(bytes calldata _terms)
        public
        pure
        returns (uint256 periodAmount_, uint256 periodDuration_, uint256 startDate_)
    {
        require(_terms.length > HEAD && (_terms.length - HEAD) % ENTRY == 0, "BasketPeriodEnforcer:invalid-terms-length");
        periodAmount_ = uint256(bytes32(_terms[0:32]));
        periodDuration_ = uint256(bytes32(_terms[32:64]));
        startDate_ = uint256(bytes32(_terms[64:96]));
        require(periodAmount_ != 0, "BasketPeriodEnforcer:invalid-zero-amount");
        require(periodAmount_ < 2 ** 192, "BasketPeriodEnforcer:invalid-amount");
        require(periodDuration_ != 0, "BasketPeriodEnforcer:invalid-zero-duration");
        require(startDate_ != 0, "BasketPeriodEnforcer:invalid-zero-start-date");
    }

    /// The decimals `terms` give `token` (the first entry naming it); more than 18 is refused.
    function decimalsOf(bytes calldata _terms, address _token) public pure returns (bool found_, uint8 decimals_) {
        require(_terms.length > HEAD && (_terms.length - HEAD) % ENTRY == 0, "BasketPeriodEnforcer:invalid-terms-length");
        for (uint256 i = HEAD; i + ENTRY <= _terms.length; i += ENTRY) {
            if (address(bytes20(_terms[i:i + 20])) == _token) {
                decimals_ = uint8(_terms[i + 20]);
                require(decimals_ <= 18, "BasketPeriodEnforcer:invalid-decimals");
                return (true, decimals_);
            }
        }
        return (false, 0);
    }

    /// What is left of the current period's allowance for `_delegationHash` redeemed through
    /// `_delegationManager`, the spend in it and the current period's index (0 before the start).
    function getAvailableAmount(bytes32 _delegationHash, address _delegationManager, bytes calldata _terms)
        external
        view
        returns (uint256 available_, uint256 spent_, uint256 currentPeriod_)
    {
        (uint256 periodAmount, uint256 periodDuration, uint256 startDate) = getTermsInfo(_terms);
        if (block.timestamp < startDate) return (0, 0, 0);
        currentPeriod_ = (block.timestamp - startDate) / periodDuration + 1;
        PeriodicAllowance storage allowance = allowances[_delegationManager][_delegationHash];
        spent_ = allowance.lastPeriod == currentPeriod_ ? allowance.spentInPeriod : 0;
        available_ = periodAmount - spent_;
    }
}
