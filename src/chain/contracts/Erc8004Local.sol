// SPDX-License-Identifier: MIT
// The first implementation behind the local network's ERC-8004 registry proxies (erc8004/):
// the published registries are UUPS implementations whose `initialize` is `reinitializer(2)
// onlyOwner`, meant to be reached by upgrading a proxy that already has an owner. Their own
// placeholder (MinimalUUPS.sol upstream) fixes the owner to the ERC-8004 team's address; this one
// takes the owner as its argument, so the local deployer can upgrade the proxy to the published
// implementation and initialize it, exactly the published path otherwise.
// Compiled to Erc8004Local.ts by scripts/compile-contracts.ts; deployed by LocalNetwork.ts.
pragma solidity 0.8.28;

import "@openzeppelin/contracts-upgradeable/proxy/utils/UUPSUpgradeable.sol";
import "@openzeppelin/contracts-upgradeable/access/OwnableUpgradeable.sol";

contract Erc8004Bootstrap is OwnableUpgradeable, UUPSUpgradeable {
    /// @custom:oz-upgrades-unsafe-allow constructor
    constructor() {
        _disableInitializers();
    }

    function initialize(address owner_) public initializer {
        __Ownable_init(owner_);
        __UUPSUpgradeable_init();
    }

    function _authorizeUpgrade(address) internal override onlyOwner {}
}
