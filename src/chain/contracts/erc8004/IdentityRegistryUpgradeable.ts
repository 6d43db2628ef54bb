/**
 * Generated from erc8004/IdentityRegistryUpgradeable.sol by scripts/compile-contracts.ts with solc-js 0.8.28+commit.7893614a.Emscripten.clang
 * (optimizer on, 200 runs, evm shanghai, via-IR). Do not edit by hand:
 * change the source and run `npm run contracts:compile`.
 */
export const identityRegistryUpgradeableAbi = [
  {
    "inputs": [],
    "stateMutability": "nonpayable",
    "type": "constructor"
  },
  {
    "inputs": [
      {
        "internalType": "address",
        "name": "target",
        "type": "address"
      }
    ],
    "name": "AddressEmptyCode",
    "type": "error"
  },
  {
    "inputs": [
      {
        "internalType": "address",
        "name": "implementation",
        "type": "address"
      }
    ],
    "name": "ERC1967InvalidImplementation",
    "type": "error"
  },
  {
    "inputs": [],
    "name": "ERC1967NonPayable",
    "type": "error"
  },
  {
    "inputs": [
      {
        "internalType": "address",
        "name": "sender",
        "type": "address"
      },
      {
        "internalType": "uint256",
        "name": "tokenId",
        "type": "uint256"
      },
      {
        "internalType": "address",
        "name": "owner",
        "type": "address"
      }
    ],
    "name": "ERC721IncorrectOwner",
    "type": "error"
  },
  {
    "inputs": [
      {
        "internalType": "address",
        "name": "operator",
        "type": "address"
      },
      {
        "internalType": "uint256",
        "name": "tokenId",
        "type": "uint256"
      }
    ],
    "name": "ERC721InsufficientApproval",
    "type": "error"
  },
  {
    "inputs": [
      {
        "internalType": "address",
        "name": "approver",
        "type": "address"
      }
    ],
    "name": "ERC721InvalidApprover",
    "type": "error"
  },
  {
    "inputs": [
      {
        "internalType": "address",
        "name": "operator",
        "type": "address"
      }
    ],
    "name": "ERC721InvalidOperator",
    "type": "error"
  },
  {
    "inputs": [
      {
        "internalType": "address",
        "name": "owner",
        "type": "address"
      }
    ],
    "name": "ERC721InvalidOwner",
    "type": "error"
  },
  {
    "inputs": [
      {
        "internalType": "address",
        "name": "receiver",
        "type": "address"
      }
    ],
    "name": "ERC721InvalidReceiver",
    "type": "error"
  },
  {
    "inputs": [
      {
        "internalType": "address",
        "name": "sender",
        "type": "address"
      }
    ],
    "name": "ERC721InvalidSender",
    "type": "error"
  },
  {
    "inputs": [
      {
        "internalType": "uint256",
        "name": "tokenId",
        "type": "uint256"
      }
    ],
    "name": "ERC721NonexistentToken",
    "type": "error"
  },
  {
    "inputs": [],
    "name": "FailedCall",
    "type": "error"
  },
  {
    "inputs": [],
    "name": "InvalidInitialization",
    "type": "error"
  },
  {
    "inputs": [],
    "name": "NotInitializing",
    "type": "error"
  },
  {
    "inputs": [
      {
        "internalType": "address",
        "name": "owner",
        "type": "address"
      }
    ],
    "name": "OwnableInvalidOwner",
    "type": "error"
  },
  {
    "inputs": [
      {
        "internalType": "address",
        "name": "account",
        "type": "address"
      }
    ],
    "name": "OwnableUnauthorizedAccount",
    "type": "error"
  },
  {
    "inputs": [],
    "name": "UUPSUnauthorizedCallContext",
    "type": "error"
  },
  {
    "inputs": [
      {
        "internalType": "bytes32",
        "name": "slot",
        "type": "bytes32"
      }
    ],
    "name": "UUPSUnsupportedProxiableUUID",
    "type": "error"
  },
  {
    "anonymous": false,
    "inputs": [
      {
        "indexed": true,
        "internalType": "address",
        "name": "owner",
        "type": "address"
      },
      {
        "indexed": true,
        "internalType": "address",
        "name": "approved",
        "type": "address"
      },
      {
        "indexed": true,
        "internalType": "uint256",
        "name": "tokenId",
        "type": "uint256"
      }
    ],
    "name": "Approval",
    "type": "event"
  },
  {
    "anonymous": false,
    "inputs": [
      {
        "indexed": true,
        "internalType": "address",
        "name": "owner",
        "type": "address"
      },
      {
        "indexed": true,
        "internalType": "address",
        "name": "operator",
        "type": "address"
      },
      {
        "indexed": false,
        "internalType": "bool",
        "name": "approved",
        "type": "bool"
      }
    ],
    "name": "ApprovalForAll",
    "type": "event"
  },
  {
    "anonymous": false,
    "inputs": [
      {
        "indexed": false,
        "internalType": "uint256",
        "name": "_fromTokenId",
        "type": "uint256"
      },
      {
        "indexed": false,
        "internalType": "uint256",
        "name": "_toTokenId",
        "type": "uint256"
      }
    ],
    "name": "BatchMetadataUpdate",
    "type": "event"
  },
  {
    "anonymous": false,
    "inputs": [],
    "name": "EIP712DomainChanged",
    "type": "event"
  },
  {
    "anonymous": false,
    "inputs": [
      {
        "indexed": false,
        "internalType": "uint64",
        "name": "version",
        "type": "uint64"
      }
    ],
    "name": "Initialized",
    "type": "event"
  },
  {
    "anonymous": false,
    "inputs": [
      {
        "indexed": true,
        "internalType": "uint256",
        "name": "agentId",
        "type": "uint256"
      },
      {
        "indexed": true,
        "internalType": "string",
        "name": "indexedMetadataKey",
        "type": "string"
      },
      {
        "indexed": false,
        "internalType": "string",
        "name": "metadataKey",
        "type": "string"
      },
      {
        "indexed": false,
        "internalType": "bytes",
        "name": "metadataValue",
        "type": "bytes"
      }
    ],
    "name": "MetadataSet",
    "type": "event"
  },
  {
    "anonymous": false,
    "inputs": [
      {
        "indexed": false,
        "internalType": "uint256",
        "name": "_tokenId",
        "type": "uint256"
      }
    ],
    "name": "MetadataUpdate",
    "type": "event"
  },
  {
    "anonymous": false,
    "inputs": [
      {
        "indexed": true,
        "internalType": "address",
        "name": "previousOwner",
        "type": "address"
      },
      {
        "indexed": true,
        "internalType": "address",
        "name": "newOwner",
        "type": "address"
      }
    ],
    "name": "OwnershipTransferred",
    "type": "event"
  },
  {
    "anonymous": false,
    "inputs": [
      {
        "indexed": true,
        "internalType": "uint256",
        "name": "agentId",
        "type": "uint256"
      },
      {
        "indexed": false,
        "internalType": "string",
        "name": "agentURI",
        "type": "string"
      },
      {
        "indexed": true,
        "internalType": "address",
        "name": "owner",
        "type": "address"
      }
    ],
    "name": "Registered",
    "type": "event"
  },
  {
    "anonymous": false,
    "inputs": [
      {
        "indexed": true,
        "internalType": "address",
        "name": "from",
        "type": "address"
      },
      {
        "indexed": true,
        "internalType": "address",
        "name": "to",
        "type": "address"
      },
      {
        "indexed": true,
        "internalType": "uint256",
        "name": "tokenId",
        "type": "uint256"
      }
    ],
    "name": "Transfer",
    "type": "event"
  },
  {
    "anonymous": false,
    "inputs": [
      {
        "indexed": true,
        "internalType": "uint256",
        "name": "agentId",
        "type": "uint256"
      },
      {
        "indexed": false,
        "internalType": "string",
        "name": "newURI",
        "type": "string"
      },
      {
        "indexed": true,
        "internalType": "address",
        "name": "updatedBy",
        "type": "address"
      }
    ],
    "name": "URIUpdated",
    "type": "event"
  },
  {
    "anonymous": false,
    "inputs": [
      {
        "indexed": true,
        "internalType": "address",
        "name": "implementation",
        "type": "address"
      }
    ],
    "name": "Upgraded",
    "type": "event"
  },
  {
    "inputs": [],
    "name": "UPGRADE_INTERFACE_VERSION",
    "outputs": [
      {
        "internalType": "string",
        "name": "",
        "type": "string"
      }
    ],
    "stateMutability": "view",
    "type": "function"
  },
  {
    "inputs": [
      {
        "internalType": "address",
        "name": "to",
        "type": "address"
      },
      {
        "internalType": "uint256",
        "name": "tokenId",
        "type": "uint256"
      }
    ],
    "name": "approve",
    "outputs": [],
    "stateMutability": "nonpayable",
    "type": "function"
  },
  {
    "inputs": [
      {
        "internalType": "address",
        "name": "owner",
        "type": "address"
      }
    ],
    "name": "balanceOf",
    "outputs": [
      {
        "internalType": "uint256",
        "name": "",
        "type": "uint256"
      }
    ],
    "stateMutability": "view",
    "type": "function"
  },
  {
    "inputs": [],
    "name": "eip712Domain",
    "outputs": [
      {
        "internalType": "bytes1",
        "name": "fields",
        "type": "bytes1"
      },
      {
        "internalType": "string",
        "name": "name",
        "type": "string"
      },
      {
        "internalType": "string",
        "name": "version",
        "type": "string"
      },
      {
        "internalType": "uint256",
        "name": "chainId",
        "type": "uint256"
      },
      {
        "internalType": "address",
        "name": "verifyingContract",
        "type": "address"
      },
      {
        "internalType": "bytes32",
        "name": "salt",
        "type": "bytes32"
      },
      {
        "internalType": "uint256[]",
        "name": "extensions",
        "type": "uint256[]"
      }
    ],
    "stateMutability": "view",
    "type": "function"
  },
  {
    "inputs": [
      {
        "internalType": "uint256",
        "name": "agentId",
        "type": "uint256"
      }
    ],
    "name": "getAgentWallet",
    "outputs": [
      {
        "internalType": "address",
        "name": "",
        "type": "address"
      }
    ],
    "stateMutability": "view",
    "type": "function"
  },
  {
    "inputs": [
      {
        "internalType": "uint256",
        "name": "tokenId",
        "type": "uint256"
      }
    ],
    "name": "getApproved",
    "outputs": [
      {
        "internalType": "address",
        "name": "",
        "type": "address"
      }
    ],
    "stateMutability": "view",
    "type": "function"
  },
  {
    "inputs": [
      {
        "internalType": "uint256",
        "name": "agentId",
        "type": "uint256"
      },
      {
        "internalType": "string",
        "name": "metadataKey",
        "type": "string"
      }
    ],
    "name": "getMetadata",
    "outputs": [
      {
        "internalType": "bytes",
        "name": "",
        "type": "bytes"
      }
    ],
    "stateMutability": "view",
    "type": "function"
  },
  {
    "inputs": [],
    "name": "getVersion",
    "outputs": [
      {
        "internalType": "string",
        "name": "",
        "type": "string"
      }
    ],
    "stateMutability": "pure",
    "type": "function"
  },
  {
    "inputs": [],
    "name": "initialize",
    "outputs": [],
    "stateMutability": "nonpayable",
    "type": "function"
  },
  {
    "inputs": [
      {
        "internalType": "address",
        "name": "owner",
        "type": "address"
      },
      {
        "internalType": "address",
        "name": "operator",
        "type": "address"
      }
    ],
    "name": "isApprovedForAll",
    "outputs": [
      {
        "internalType": "bool",
        "name": "",
        "type": "bool"
      }
    ],
    "stateMutability": "view",
    "type": "function"
  },
  {
    "inputs": [
      {
        "internalType": "address",
        "name": "spender",
        "type": "address"
      },
      {
        "internalType": "uint256",
        "name": "agentId",
        "type": "uint256"
      }
    ],
    "name": "isAuthorizedOrOwner",
    "outputs": [
      {
        "internalType": "bool",
        "name": "",
        "type": "bool"
      }
    ],
    "stateMutability": "view",
    "type": "function"
  },
  {
    "inputs": [],
    "name": "name",
    "outputs": [
      {
        "internalType": "string",
        "name": "",
        "type": "string"
      }
    ],
    "stateMutability": "view",
    "type": "function"
  },
  {
    "inputs": [],
    "name": "owner",
    "outputs": [
      {
        "internalType": "address",
        "name": "",
        "type": "address"
      }
    ],
    "stateMutability": "view",
    "type": "function"
  },
  {
    "inputs": [
      {
        "internalType": "uint256",
        "name": "tokenId",
        "type": "uint256"
      }
    ],
    "name": "ownerOf",
    "outputs": [
      {
        "internalType": "address",
        "name": "",
        "type": "address"
      }
    ],
    "stateMutability": "view",
    "type": "function"
  },
  {
    "inputs": [],
    "name": "proxiableUUID",
    "outputs": [
      {
        "internalType": "bytes32",
        "name": "",
        "type": "bytes32"
      }
    ],
    "stateMutability": "view",
    "type": "function"
  },
  {
    "inputs": [],
    "name": "register",
    "outputs": [
      {
        "internalType": "uint256",
        "name": "agentId",
        "type": "uint256"
      }
    ],
    "stateMutability": "nonpayable",
    "type": "function"
  },
  {
    "inputs": [
      {
        "internalType": "string",
        "name": "agentURI",
        "type": "string"
      },
      {
        "components": [
          {
            "internalType": "string",
            "name": "metadataKey",
            "type": "string"
          },
          {
            "internalType": "bytes",
            "name": "metadataValue",
            "type": "bytes"
          }
        ],
        "internalType": "struct IdentityRegistryUpgradeable.MetadataEntry[]",
        "name": "metadata",
        "type": "tuple[]"
      }
    ],
    "name": "register",
    "outputs": [
      {
        "internalType": "uint256",
        "name": "agentId",
        "type": "uint256"
      }
    ],
    "stateMutability": "nonpayable",
    "type": "function"
  },
  {
    "inputs": [
      {
        "internalType": "string",
        "name": "agentURI",
        "type": "string"
      }
    ],
    "name": "register",
    "outputs": [
      {
        "internalType": "uint256",
        "name": "agentId",
        "type": "uint256"
      }
    ],
    "stateMutability": "nonpayable",
    "type": "function"
  },
  {
    "inputs": [],
    "name": "renounceOwnership",
    "outputs": [],
    "stateMutability": "nonpayable",
    "type": "function"
  },
  {
    "inputs": [
      {
        "internalType": "address",
        "name": "from",
        "type": "address"
      },
      {
        "internalType": "address",
        "name": "to",
        "type": "address"
      },
      {
        "internalType": "uint256",
        "name": "tokenId",
        "type": "uint256"
      }
    ],
    "name": "safeTransferFrom",
    "outputs": [],
    "stateMutability": "nonpayable",
    "type": "function"
  },
  {
    "inputs": [
      {
        "internalType": "address",
        "name": "from",
        "type": "address"
      },
      {
        "internalType": "address",
        "name": "to",
        "type": "address"
      },
      {
        "internalType": "uint256",
        "name": "tokenId",
        "type": "uint256"
      },
      {
        "internalType": "bytes",
        "name": "data",
        "type": "bytes"
      }
    ],
    "name": "safeTransferFrom",
    "outputs": [],
    "stateMutability": "nonpayable",
    "type": "function"
  },
  {
    "inputs": [
      {
        "internalType": "uint256",
        "name": "agentId",
        "type": "uint256"
      },
      {
        "internalType": "string",
        "name": "newURI",
        "type": "string"
      }
    ],
    "name": "setAgentURI",
    "outputs": [],
    "stateMutability": "nonpayable",
    "type": "function"
  },
  {
    "inputs": [
      {
        "internalType": "uint256",
        "name": "agentId",
        "type": "uint256"
      },
      {
        "internalType": "address",
        "name": "newWallet",
        "type": "address"
      },
      {
        "internalType": "uint256",
        "name": "deadline",
        "type": "uint256"
      },
      {
        "internalType": "bytes",
        "name": "signature",
        "type": "bytes"
      }
    ],
    "name": "setAgentWallet",
    "outputs": [],
    "stateMutability": "nonpayable",
    "type": "function"
  },
  {
    "inputs": [
      {
        "internalType": "address",
        "name": "operator",
        "type": "address"
      },
      {
        "internalType": "bool",
        "name": "approved",
        "type": "bool"
      }
    ],
    "name": "setApprovalForAll",
    "outputs": [],
    "stateMutability": "nonpayable",
    "type": "function"
  },
  {
    "inputs": [
      {
        "internalType": "uint256",
        "name": "agentId",
        "type": "uint256"
      },
      {
        "internalType": "string",
        "name": "metadataKey",
        "type": "string"
      },
      {
        "internalType": "bytes",
        "name": "metadataValue",
        "type": "bytes"
      }
    ],
    "name": "setMetadata",
    "outputs": [],
    "stateMutability": "nonpayable",
    "type": "function"
  },
  {
    "inputs": [
      {
        "internalType": "bytes4",
        "name": "interfaceId",
        "type": "bytes4"
      }
    ],
    "name": "supportsInterface",
    "outputs": [
      {
        "internalType": "bool",
        "name": "",
        "type": "bool"
      }
    ],
    "stateMutability": "view",
    "type": "function"
  },
  {
    "inputs": [],
    "name": "symbol",
    "outputs": [
      {
        "internalType": "string",
        "name": "",
        "type": "string"
      }
    ],
    "stateMutability": "view",
    "type": "function"
  },
  {
    "inputs": [
      {
        "internalType": "uint256",
        "name": "tokenId",
        "type": "uint256"
      }
    ],
    "name": "tokenURI",
    "outputs": [
      {
        "internalType": "string",
        "name": "",
        "type": "string"
      }
    ],
    "stateMutability": "view",
    "type": "function"
  },
  {
    "inputs": [
      {
        "internalType": "address",
        "name": "from",
        "type": "address"
      },
      {
        "internalType": "address",
        "name": "to",
        "type": "address"
      },
      {
        "internalType": "uint256",
        "name": "tokenId",
        "type": "uint256"
      }
    ],
    "name": "transferFrom",
    "outputs": [],
    "stateMutability": "nonpayable",
    "type": "function"
  },
  {
    "inputs": [
      {
        "internalType": "address",
        "name": "newOwner",
        "type": "address"
      }
    ],
    "name": "transferOwnership",
    "outputs": [],
    "stateMutability": "nonpayable",
    "type": "function"
  },
  {
    "inputs": [
      {
        "internalType": "uint256",
        "name": "agentId",
        "type": "uint256"
      }
    ],
    "name": "unsetAgentWallet",
    "outputs": [],
    "stateMutability": "nonpayable",
    "type": "function"
  },
  {
    "inputs": [
      {
        "internalType": "address",
        "name": "newImplementation",
        "type": "address"
      },
      {
        "internalType": "bytes",
        "name": "data",
        "type": "bytes"
      }
    ],
    "name": "upgradeToAndCall",
    "outputs": [],
    "stateMutability": "payable",
    "type": "function"
  }
] as const

export const identityRegistryUpgradeableBytecode = "0x60a080604052346100c257306080525f5160206139d05f395f51905f525460ff8160401c166100b3576002600160401b03196001600160401b03821601610060575b60405161390990816100c7823960805181818161164201526116d30152f35b6001600160401b0319166001600160401b039081175f5160206139d05f395f51905f525581527fc7f505b2f371ae2175ee4913f4499e1f2633a7b5936321eed1cdaeb6115181d290602090a15f80610041565b63f92ee8a960e01b5f5260045ffd5b5f80fdfe6080806040526004361015610012575f80fd5b5f3560e01c908162339509146126225750806301ffc9a71461259a57806306fdde03146124dd578063081812fc146124b5578063095ea7b3146123c95780630af28bd3146122cc5780630d8e6e2c146122855780631aa3a008146120eb57806323b872dd146120d45780632d1ef5ae14611bca5780633fddcf1914611abf57806342842e0e14611a90578063466648da146118635780634f1ef2861461169657806352d1902d146116305780636352211e1461160057806370a08231146115b1578063715018a61461154a5780638129fc1c14610de857806384b0196e14610c9e5780638da5cb5b14610c6a5780638ea422861461079a57806395d89b41146106b8578063a22cb46514610620578063ad3cb1cc146105d9578063b88d4fde1461057d578063c87b56dd1461055e578063cb4799f2146104c0578063d95e72be14610486578063e985e9c51461043a578063f2c298be146102115763f2fde38b1461017b575f80fd5b3461020d57602036600319011261020d57610194612713565b61019c6132aa565b6001600160a01b031680156101fa575f5160206137b45f395f51905f5280546001600160a01b0319811683179091556001600160a01b03167f8be0079c531659141344cd1fd0a4f28419497f9722a3daafe3b4186f6b6457e05f80a3005b631e4fbdf760e01b5f525f60045260245ffd5b5f80fd5b3461020d57602036600319011261020d576004356001600160401b03811161020d57610241903690600401612818565b5f5160206138345f395f51905f52546102598161294c565b5f5160206138345f395f51905f5255604051913360601b90816020850152601484526102866034856127a6565b825f525f5160206137d45f395f51905f52602052602b60405f20604051906a1859d95b9d15d85b1b195d60aa1b8252600b8201522084516001600160401b038111610426576020956102e2826102dc8554612836565b85612998565b8690601f83116001146103c45761031092915f91836103b9575b50508160011b915f199060031b1c19161790565b90555b61031d8333612f9c565b6103278184612e5d565b827fca52e62c367d81bb2e328eb795f7c7ba24afb478408a26c0e201d155c449bc4a6040518681528061035e3395898301906126ee565b0390a36040519083820152601481526103786034826127a6565b815f5160206138545f395f51905f526103ae600b6040516a1859d95b9d15d85b1b195d60aa1b81522093604051918291826129d0565b0390a3604051908152f35b0151905088806102fc565b90601f19831691845f52815f20925f5b81811061040f57509084600195949392106103f7575b505050811b019055610313565b01515f1960f88460031b161c191690558780806103ea565b92938a6001819287860151815501950193016103d4565b634e487b7160e01b5f52604160045260245ffd5b3461020d57604036600319011261020d57610453612713565b61046461045e612729565b91612d4f565b9060018060a01b03165f52602052602060ff60405f2054166040519015158152f35b3461020d57604036600319011261020d5760206104b66104a4612713565b602435906104b182612e08565b61352c565b6040519015158152f35b3461020d57604036600319011261020d576024356001600160401b03811161020d5761053f61054661052a60206104fe61055a953690600401612818565b6004355f525f5160206137d45f395f51905f52825260405f2082604051948386809551938492016126cd565b8201908152030190206040519283809261286e565b03826127a6565b6040519182916020835260208301906126ee565b0390f35b3461020d57602036600319011261020d5761055a610546600435612daf565b3461020d57608036600319011261020d57610596612713565b61059e612729565b90604435606435926001600160401b03841161020d576105c56105d7943690600401612818565b926105d1838383612a06565b33613453565b005b3461020d575f36600319011261020d5761055a6040516105fa6040826127a6565b60058152640352e302e360dc1b60208201526040519182916020835260208301906126ee565b3461020d57604036600319011261020d57610639612713565b6024359081151580920361020d576001600160a01b03169081156106a55761066033612d4f565b825f5260205260405f2060ff1981541660ff83161790556040519081527f17307eab39ab6107e8899845ad3d59bd9653f200f220920489ca2b5937696c3160203392a3005b50630b61174360e31b5f5260045260245ffd5b3461020d575f36600319011261020d576040515f5f5160206138b45f395f51905f52546106e481612836565b8084529060018116908115610776575060011461070c575b61055a83610546818503826127a6565b5f5160206138b45f395f51905f525f9081527ff4bad0a69248f59680a4f2b3000328cec71a413447c96781cfe5996daa8c456e939250905b80821061075c575090915081016020016105466106fc565b919260018160209254838588010152019101909291610744565b60ff191660208086019190915291151560051b8401909101915061054690506106fc565b3461020d57604036600319011261020d576004356001600160401b03811161020d576107ca903690600401612818565b6024356001600160401b03811161020d573660238201121561020d578060040135906001600160401b038211610426578160051b90602082019261081160405194856127a6565b8352602460208401928201019036821161020d5760248101925b828410610bd1575f5160206138345f395f51905f5254858761084c8361294c565b5f5160206138345f395f51905f5255604051903360601b91826020820152601481526108796034826127a6565b845f525f5160206137d45f395f51905f52602052602b60405f20604051906a1859d95b9d15d85b1b195d60aa1b8252600b82015220908051906001600160401b038211610426576108ce826102dc8554612836565b602090601f8311600114610b6b576108fc92915f91836103b95750508160011b915f199060031b1c19161790565b90559291925b61090c8333612f9c565b6109168184612e5d565b827fca52e62c367d81bb2e328eb795f7c7ba24afb478408a26c0e201d155c449bc4a604051602081528061094f339560208301906126ee565b0390a36040519060208201526014815261096a6034826127a6565b815f5160206138545f395f51905f526109a0600b6040516a1859d95b9d15d85b1b195d60aa1b81522093604051918291826129d0565b0390a35f915b8051831015610b60576109ed7f2ac6109326e720d1435c0db66f7e35eda7839f52b6f1f5520a60788e132b4e396109dd8584612d87565b5151602081519101201415612ca5565b60206109f98483612d87565b51015192825f525f5160206137d45f395f51905f52602052610a3a602060405f20610a248486612d87565b51519082604051948386809551938492016126cd565b8201908152030190208451946001600160401b03861161042657610a6886610a628454612836565b84612998565b602090601f8711600114610af9579580610a9b9260019697985f926103b95750508160011b915f199060031b1c19161790565b90555b610aa88184612d87565b5151845f5160206138545f395f51905f52610ac38487612d87565b515192610ade6020610ad5878a612d87565b51015191612ce0565b93610aee60405192839283612d00565b0390a30191906109a6565b90601f19871691835f52815f20925f5b818110610b48575091600196979892918388959310610b30575b505050811b019055610a9e565b01515f1960f88460031b161c19169055878080610b23565b82840151855560019094019360209384019301610b09565b602082604051908152f35b90601f19831691845f52815f20925f5b818110610bb95750908460019594939210610ba1575b505050811b019055929192610902565b01515f1960f88460031b161c19169055878080610b91565b92936020600181928786015181550195019301610b7b565b83356001600160401b03811161020d5782016040602319823603011261020d5760405191604083018381106001600160401b038211176104265760405260248201356001600160401b03811161020d57610c319060243691850101612818565b83526044820135926001600160401b03841161020d57610c5b602094936024869536920101612818565b8382015281520193019261082b565b3461020d575f36600319011261020d575f5160206137b45f395f51905f52546040516001600160a01b039091168152602090f35b3461020d575f36600319011261020d577fa16a46d94261c7517cc8ff89f61c0ce93598e3c849801011dee649a6a557d100541580610dbf575b15610d8257610d26610ce76132dd565b610cef6133a8565b6020610d3460405192610d0283856127a6565b5f84525f368137604051958695600f60f81b875260e08588015260e08701906126ee565b9085820360408701526126ee565b4660608501523060808501525f60a085015283810360c08501528180845192838152019301915f5b828110610d6b57505050500390f35b835185528695509381019392810192600101610d5c565b60405162461bcd60e51b81526020600482015260156024820152741152540dcc4c8e88155b9a5b9a5d1a585b1a5e9959605a1b6044820152606490fd5b507fa16a46d94261c7517cc8ff89f61c0ce93598e3c849801011dee649a6a557d1015415610cd7565b3461020d575f36600319011261020d575f5160206138945f395f51905f525460ff8160401c168015611536575b6115275768ffffffffffffffffff191668010000000000000002175f5160206138945f395f51905f5255610e476132aa565b6040805190610e5681836127a6565b600d82526c4167656e744964656e7469747960981b6020830152805190610e7d81836127a6565b60058252641051d1539560da1b6020830152610e9761363b565b610e9f61363b565b82516001600160401b03811161042657610ec65f5160206137745f395f51905f5254612836565b601f81116114cd575b506020601f8211600114611434578190610eff9394955f926112765750508160011b915f199060031b1c19161790565b5f5160206137745f395f51905f52555b81516001600160401b03811161042657610f365f5160206138b45f395f51905f5254612836565b601f81116113da575b50602092601f821160011461136157610f6f929382915f926113565750508160011b915f199060031b1c19161790565b5f5160206138b45f395f51905f52555b610f8761363b565b805190610f9481836127a6565b601782527f455243383030344964656e74697479526567697374727900000000000000000060208301528051610fca82826127a6565b60018152603160f81b6020820152610fe061363b565b610fe861363b565b82516001600160401b0381116104265761100f5f5160206137945f395f51905f5254612836565b601f81116112fc575b506020601f82116001146112815781906110489394955f926112765750508160011b915f199060031b1c19161790565b5f5160206137945f395f51905f52555b8051906001600160401b038211610426576110805f5160206137f45f395f51905f5254612836565b601f8111611211575b50602090601f831160011461117057826020937fc7f505b2f371ae2175ee4913f4499e1f2633a7b5936321eed1cdaeb6115181d295936110dd935f926111655750508160011b915f199060031b1c19161790565b5f5160206137f45f395f51905f52555b5f7fa16a46d94261c7517cc8ff89f61c0ce93598e3c849801011dee649a6a557d100555f7fa16a46d94261c7517cc8ff89f61c0ce93598e3c849801011dee649a6a557d1015568ff0000000000000000195f5160206138945f395f51905f5254165f5160206138945f395f51905f52555160028152a1005b0151905086806102fc565b90601f198316915f5160206137f45f395f51905f525f52815f20925f5b8181106111f957509260019285926020967fc7f505b2f371ae2175ee4913f4499e1f2633a7b5936321eed1cdaeb6115181d29896106111e1575b505050811b015f5160206137f45f395f51905f52556110ed565b01515f1960f88460031b161c191690558580806111c7565b9293602060018192878601518155019501930161118d565b5f5160206137f45f395f51905f525f52611266907f5f9ce34815f8e11431c7bb75a8e6886a91478f7ffc1dbb0a98dc240fddd76b75601f850160051c8101916020861061126c575b601f0160051c019061295a565b83611089565b9091508190611259565b0151905085806102fc565b601f198216905f5160206137945f395f51905f525f52805f20915f5b8181106112e4575095836001959697106112cc575b505050811b015f5160206137945f395f51905f5255611058565b01515f1960f88460031b161c191690558480806112b2565b9192602060018192868b01518155019401920161129d565b5f5160206137945f395f51905f525f52611350907f42ad5d3e1f2e6e70edcf6d991b8a3023d3fca8047a131592f9edb9fd9b89d57d601f840160051c8101916020851061126c57601f0160051c019061295a565b84611018565b0151905084806102fc565b601f198216935f5160206138b45f395f51905f525f52805f20915f5b8681106113c257508360019596106113aa575b505050811b015f5160206138b45f395f51905f5255610f7f565b01515f1960f88460031b161c19169055838080611390565b9192602060018192868501518155019401920161137d565b5f5160206138b45f395f51905f525f5261142e907ff4bad0a69248f59680a4f2b3000328cec71a413447c96781cfe5996daa8c456e601f840160051c8101916020851061126c57601f0160051c019061295a565b83610f3f565b601f198216905f5160206137745f395f51905f525f527f37c58c799b6609234b945e882912ee9ad34948a1dfaa20a97485e1a7752bbf81915f5b8181106114b55750958360019596971061149d575b505050811b015f5160206137745f395f51905f5255610f0f565b01515f1960f88460031b161c19169055848080611483565b9192602060018192868b01518155019401920161146e565b5f5160206137745f395f51905f525f52611521907f37c58c799b6609234b945e882912ee9ad34948a1dfaa20a97485e1a7752bbf81601f840160051c8101916020851061126c57601f0160051c019061295a565b84610ecf565b63f92ee8a960e01b5f5260045ffd5b5060026001600160401b0382161015610e15565b3461020d575f36600319011261020d576115626132aa565b5f5160206137b45f395f51905f5280546001600160a01b031981169091555f906001600160a01b03167f8be0079c531659141344cd1fd0a4f28419497f9722a3daafe3b4186f6b6457e08280a3005b3461020d57602036600319011261020d576115ca612713565b6001600160a01b038116156115ed576115e4602091612d17565b54604051908152f35b6322718ad960e21b5f525f60045260245ffd5b3461020d57602036600319011261020d57602061161e600435612e08565b6040516001600160a01b039091168152f35b3461020d575f36600319011261020d577f00000000000000000000000000000000000000000000000000000000000000006001600160a01b031630036116875760206040515f5160206138145f395f51905f528152f35b63703e46dd60e11b5f5260045ffd5b604036600319011261020d576116aa612713565b6024356001600160401b03811161020d576116c9903690600401612818565b6001600160a01b037f000000000000000000000000000000000000000000000000000000000000000016308114908115611841575b506116875761170b6132aa565b6040516352d1902d60e01b81526001600160a01b0383169290602081600481875afa5f918161180d575b5061174d5783634c9c8ce360e01b5f5260045260245ffd5b805f5160206138145f395f51905f528592036117fb5750813b156117e9575f5160206138145f395f51905f5280546001600160a01b031916821790557fbc7cd75a20ee27fd9adebab32041f755214dbc6bffa90cc0225b39da2e5c2d3b5f80a28151156117d1575f808360206105d795519101845af46117cb612c23565b91613715565b5050346117da57005b63b398979f60e01b5f5260045ffd5b634c9c8ce360e01b5f5260045260245ffd5b632a87526960e21b5f5260045260245ffd5b9091506020813d602011611839575b81611829602093836127a6565b8101031261020d57519085611735565b3d915061181c565b5f5160206138145f395f51905f52546001600160a01b031614159050836116fe565b3461020d57606036600319011261020d576004356024356001600160401b03811161020d57611896903690600401612818565b906044356001600160401b03811161020d576118b6903690600401612818565b6118bf82613271565b336001600160a01b03821614908115611a6d575b508015611a44575b6118e4906128ef565b6119446020845161191c7f2ac6109326e720d1435c0db66f7e35eda7839f52b6f1f5520a60788e132b4e398388019283201415612ca5565b845f525f5160206137d45f395f51905f52825260405f206040518094819389519283916126cd565b82019081520301902081516001600160401b0381116104265761196b81610a628454612836565b6020601f82116001146119d457815f5160206138545f395f51905f529493926119a8925f916119c9575b508160011b915f199060031b1c19161790565b90555b6119b484612ce0565b936119c460405192839283612d00565b0390a3005b905084015188611995565b601f19821690835f52805f20915f5b818110611a2c57509183915f5160206138545f395f51905f5296959460019410611a14575b5050811b0190556119ab565b8501515f1960f88460031b161c191690558780611a08565b9192602060018192868a0151815501940192016119e3565b50611a4e82612e08565b506118e46001600160a01b03611a6384612e37565b16331490506118db565b611a779150612d4f565b335f908152602091909152604090205460ff16846118d3565b3461020d576105d7611aa13661276c565b9060405192611ab16020856127a6565b5f84526105d1838383612a06565b3461020d57602036600319011261020d57600435611adc81612e08565b336001600160a01b03821614908115611ba7575b508015611b7e575b611b01906128ef565b805f525f5160206137d45f395f51905f526020525f602b60408220604051906a1859d95b9d15d85b1b195d60aa1b8252600b82015220611b4a611b448254612836565b82612970565b55600b6040516a1859d95b9d15d85b1b195d60aa1b815220905f5160206138545f395f51905f52604051806119c481612c72565b50611b8881612e08565b50611b016001600160a01b03611b9d83612e37565b1633149050611af8565b611bb19150612d4f565b335f908152602091909152604090205460ff1682611af0565b3461020d57608036600319011261020d57600435611be6612729565b906044356064356001600160401b03811161020d57611c0990369060040161273f565b9091611c1484612e08565b6001600160a01b03811691903383149081156120b1575b508015612088575b611c3c906128ef565b6001600160a01b038616918215612056578142116120275761012c4201804211612013578211611fdb576042916040519060208201927f678b53cd718d595370ab070ebf48edfdcd834beac116bf23e625fc7f4d5b7d328452886040840152856060840152608083015260a082015260a08152611cba60c0826127a6565b519020611cc5613666565b611ccd6136d0565b6040519060208201927f8b73c3c69bb8fe3d512ecc4cf759cc79239f7b179b0ffacaa9a75d522b39400f8452604083015260608201524660808201523060a082015260a08152611d1e60c0826127a6565b519020906040519161190160f01b8352600283015260228201522090611d4e611d483685876127e2565b83613237565b506004819392931015611fc7571591821592611fb3575b5050611ed1575b505050604051916bffffffffffffffffffffffff199060601b169081602084015260148352611d9c6034846127a6565b805f525f5160206137d45f395f51905f52602052602b60405f20604051906a1859d95b9d15d85b1b195d60aa1b8252600b8201522083516001600160401b03811161042657611def81610a628454612836565b602094601f8211600114611e7057611e209293949582915f926111655750508160011b915f199060031b1c19161790565b90555b60405191602083015260148252611e3b6034836127a6565b5f5160206138545f395f51905f526119c4600b6040516a1859d95b9d15d85b1b195d60aa1b81522093604051918291826129d0565b601f19821695835f52805f20915f5b888110611eb957508360019596979810611ea1575b505050811b019055611e23565b01515f1960f88460031b161c19169055858080611e94565b91926020600181928685015181550194019201611e7f565b5f92611f148493611f066040519384926020840196630b135d3f60e11b8852602485015260406044850152606484019161292c565b03601f1981018352826127a6565b5190855afa611f21612c23565b81611fa5575b81611f75575b5015611f3b57828080611d6c565b60405162461bcd60e51b8152602060048201526012602482015271696e76616c69642077616c6c65742073696760701b6044820152606490fd5b8051630b135d3f60e11b92506001600160e01b031991611f9d91810160209081019101612c52565b161483611f2d565b905060208151101590611f27565b6001600160a01b0316141590508680611d65565b634e487b7160e01b5f52602160045260245ffd5b60405162461bcd60e51b815260206004820152601060248201526f3232b0b23634b732903a37b7903330b960811b6044820152606490fd5b634e487b7160e01b5f52601160045260245ffd5b60405162461bcd60e51b8152602060048201526007602482015266195e1c1a5c995960ca1b6044820152606490fd5b60405162461bcd60e51b815260206004820152600a602482015269189859081dd85b1b195d60b21b6044820152606490fd5b5061209285612e08565b50611c3c6001600160a01b036120a787612e37565b1633149050611c33565b6120bb9150612d4f565b335f908152602091909152604090205460ff1687611c2b565b3461020d576105d76120e53661276c565b91612a06565b3461020d575f36600319011261020d575f5160206138345f395f51905f52546121138161294c565b5f5160206138345f395f51905f5255604051903360601b8060208401526014835261213f6034846127a6565b815f525f5160206137d45f395f51905f52602052602b60405f20604051906a1859d95b9d15d85b1b195d60aa1b8252600b8201522083516001600160401b03811161042657602094612195826102dc8554612836565b8590601f8311600114612223576121c292915f91836122185750508160011b915f199060031b1c19161790565b90555b6121cf8233612f9c565b6040518381525f84820152827fca52e62c367d81bb2e328eb795f7c7ba24afb478408a26c0e201d155c449bc4a60403393a36040519083820152601481526103786034826127a6565b0151905087806102fc565b90601f19831691845f52815f20925f5b81811061226e5750908460019594939210612256575b505050811b0190556121c5565b01515f1960f88460031b161c19169055868080612249565b929389600181928786015181550195019301612233565b3461020d575f36600319011261020d5761055a6040516122a66040826127a6565b60058152640322e302e360dc1b60208201526040519182916020835260208301906126ee565b3461020d57604036600319011261020d576024356004356001600160401b03821161020d577f3a2c7fffc2cba7582c690e3b82c453ea02a308326a98a3ad7576c606336409fb6123236119c493369060040161273f565b939061232e84612e08565b336001600160a01b038216149081156123a6575b50801561237d575b612353906128ef565b6123676123613687846127e2565b85612e5d565b604051918291602083523396602084019161292c565b5061238784612e08565b506123536001600160a01b0361239c86612e37565b163314905061234a565b6123b09150612d4f565b335f908152602091909152604090205460ff1686612342565b3461020d57604036600319011261020d576123e2612713565b6024356123ee81612e08565b331515806124a2575b8061247f575b61246c5781906001600160a01b0384811691167f8c5be1e5ebec7d5bd14f71427d1e84f3dd0314c0f7b2291e5b200ac8c7c3b9255f80a45f9081525f5160206138745f395f51905f526020526040902080546001600160a01b0319166001600160a01b03909216919091179055005b63a9fbf51f60e01b5f523360045260245ffd5b5061248981612d4f565b335f908152602091909152604090205460ff16156123fd565b506001600160a01b0381163314156123f7565b3461020d57602036600319011261020d57602061161e6004356124d781612e08565b50612e37565b3461020d575f36600319011261020d576040515f5f5160206137745f395f51905f525461250981612836565b808452906001811690811561077657506001146125305761055a83610546818503826127a6565b5f5160206137745f395f51905f525f9081527f37c58c799b6609234b945e882912ee9ad34948a1dfaa20a97485e1a7752bbf81939250905b808210612580575090915081016020016105466106fc565b919260018160209254838588010152019101909291612568565b3461020d57602036600319011261020d5760043563ffffffff60e01b811680910361020d57602090632483248360e11b81149081156125df575b506040519015158152f35b6380ac58cd60e01b811491508115612611575b8115612600575b50826125d4565b6301ffc9a760e01b149050826125f9565b635b5e139f60e01b811491506125f2565b3461020d57602036600319011261020d5761053f61267a602b6020936004355f525f5160206137d45f395f51905f52855260405f206a1859d95b9d15d85b1b195d60aa1b8252600b820152206040519283809261286e565b8051908201516bffffffffffffffffffffffff1981169190601482106126a8575b50506040519060601c8152f35b6bffffffffffffffffffffffff1960149290920360031b82901b16169050828061269b565b5f5b8381106126de5750505f910152565b81810151838201526020016126cf565b90602091612707815180928185528580860191016126cd565b601f01601f1916010190565b600435906001600160a01b038216820361020d57565b602435906001600160a01b038216820361020d57565b9181601f8401121561020d578235916001600160401b03831161020d576020838186019501011161020d57565b606090600319011261020d576004356001600160a01b038116810361020d57906024356001600160a01b038116810361020d579060443590565b90601f801991011681019081106001600160401b0382111761042657604052565b6001600160401b03811161042657601f01601f191660200190565b9291926127ee826127c7565b916127fc60405193846127a6565b82948184528183011161020d578281602093845f960137010152565b9080601f8301121561020d57816020612833933591016127e2565b90565b90600182811c92168015612864575b602083101461285057565b634e487b7160e01b5f52602260045260245ffd5b91607f1691612845565b5f929181549161287d83612836565b80835292600181169081156128d2575060011461289957505050565b5f9081526020812093945091925b8383106128b8575060209250010190565b6001816020929493945483858701015201910191906128a7565b915050602093945060ff929192191683830152151560051b010190565b156128f657565b60405162461bcd60e51b815260206004820152600e60248201526d139bdd08185d5d1a1bdc9a5e995960921b6044820152606490fd5b908060209392818452848401375f828201840152601f01601f1916010190565b5f1981146120135760010190565b818110612965575050565b5f815560010161295a565b90601f811161297d575050565b612996915f52601f60205f20910160051c81019061295a565b565b9190601f81116129a757505050565b612996925f5260205f20906020601f840160051c8301931061126c57601f0160051c019061295a565b6040808252600b908201526a1859d95b9d15d85b1b195d60aa1b606082015261283391608082015b9160208184039101526126ee565b9091906001600160a01b0383168015612c10576001600160a01b03612a2a84613271565b16151580612c08575b612b89575b82612a4281613271565b9133612b3a575b6001600160a01b03831695612a629087612afe57612d17565b60018154019055815f527f80bb2b638cc20bc4d0a60d66940f3ab4a00c1d7b313497ca82fb0b4ab007930260205260405f20816bffffffffffffffffffffffff60a01b825416179055857fddf252ad1be2c89b69c2b068fc378daa952ba7f163c4a11628f55a4df523b3ef5f80a4506001600160a01b0316808303612ae657505050565b6364283d7b60e01b5f5260045260245260445260645ffd5b5f8481525f5160206138745f395f51905f526020526040902080546001600160a01b0319169055612b2e85612d17565b80545f19019055612d17565b90612b4690338461352c565b15612b52578390612a49565b836001600160a01b038316612b7357637e27328960e01b5f5260045260245ffd5b63177e802f60e01b5f523360045260245260445ffd5b825f525f5160206137d45f395f51905f526020525f602b60408220604051906a1859d95b9d15d85b1b195d60aa1b8252600b82015220612bcc611b448254612836565b55600b6040516a1859d95b9d15d85b1b195d60aa1b815220835f5160206138545f395f51905f5260405180612c0081612c72565b0390a3612a38565b506001612a33565b633250574960e11b5f525f60045260245ffd5b3d15612c4d573d90612c34826127c7565b91612c4260405193846127a6565b82523d5f602084013e565b606090565b9081602091031261020d57516001600160e01b03198116810361020d5790565b6040808252600b908201526a1859d95b9d15d85b1b195d60aa1b60608201526080602082018190525f9082015260a00190565b15612cac57565b60405162461bcd60e51b815260206004820152600c60248201526b7265736572766564206b657960a01b6044820152606490fd5b612cf8906020604051928284809451938492016126cd565b810103902090565b90916129f8612833936040845260408401906126ee565b6001600160a01b03165f9081527f80bb2b638cc20bc4d0a60d66940f3ab4a00c1d7b313497ca82fb0b4ab00793036020526040902090565b6001600160a01b03165f9081527f80bb2b638cc20bc4d0a60d66940f3ab4a00c1d7b313497ca82fb0b4ab00793056020526040902090565b8051821015612d9b5760209160051b010190565b634e487b7160e01b5f52603260045260245ffd5b612db881612e08565b505f527f0542a41881ee128a365a727b282c86fa859579490b9bb45aab8503648c8e790060205261053f612df560405f206040519283809261286e565b5f604051612e046020826127a6565b5290565b612e1181613271565b906001600160a01b03821615612e25575090565b637e27328960e01b5f5260045260245ffd5b5f9081525f5160206138745f395f51905f5260205260409020546001600160a01b031690565b919091805f527f0542a41881ee128a365a727b282c86fa859579490b9bb45aab8503648c8e790060205260405f2083516001600160401b03811161042657612ea981610a628454612836565b6020601f8211600114612f1457816020949392612efd927ff8e1a15aba9398e019f0b49df1a4fde98ee17ae345cb5f6b5e2c27f5033e8ce797985f92612f095750508160011b915f199060031b1c19161790565b90555b604051908152a1565b015190505f806102fc565b601f19821695835f52815f20965f5b818110612f84575096600192849260209796957ff8e1a15aba9398e019f0b49df1a4fde98ee17ae345cb5f6b5e2c27f5033e8ce7999a10612f6c575b505050811b019055612f00565b01515f1960f88460031b161c191690555f8080612f5f565b83830151895560019098019760209384019301612f23565b9060209060405190612fae83836127a6565b5f82526001600160a01b038416938415612c10576001600160a01b03612fd383613271565b1615158061322f575b6131b1575b612fea82613271565b6001600160a01b03811680151591908490889084613175575b61300c86612d17565b805460010190555f8381527f80bb2b638cc20bc4d0a60d66940f3ab4a00c1d7b313497ca82fb0b4ab00793028a526040812080546001600160a01b031916841790557fddf252ad1be2c89b69c2b068fc378daa952ba7f163c4a11628f55a4df523b3ef9080a450613162573b613083575b50505050565b916130c091819495936040519384928392630a85bd0160e11b84523360048501525f602485015260448401526080606484015260848301906126ee565b03815f885af15f9181613133575b506130fc5750506130dd612c23565b80519190826130f95783633250574960e11b5f5260045260245ffd5b01fd5b909291506001600160e01b03191663757a42ff60e11b0161312157505f80808061307d565b633250574960e11b5f5260045260245ffd5b613154919250843d861161315b575b61314c81836127a6565b810190612c52565b905f6130ce565b503d613142565b6339e3563760e11b5f525f60045260245ffd5b5f8381525f5160206138745f395f51905f526020526040902080546001600160a01b03191690556131a584612d17565b80545f19019055613003565b815f525f5160206137d45f395f51905f5284525f602b60408220604051906a1859d95b9d15d85b1b195d60aa1b8252600b820152206131f3611b448254612836565b55600b6040516a1859d95b9d15d85b1b195d60aa1b815220825f5160206138545f395f51905f526040518061322781612c72565b0390a3612fe1565b506001612fdc565b8151919060418303613267576132609250602082015190606060408401519301515f1a906135ae565b9192909190565b50505f9160029190565b5f9081527f80bb2b638cc20bc4d0a60d66940f3ab4a00c1d7b313497ca82fb0b4ab007930260205260409020546001600160a01b031690565b5f5160206137b45f395f51905f52546001600160a01b031633036132ca57565b63118cdaa760e01b5f523360045260245ffd5b6040515f5160206137945f395f51905f5254815f6132fa83612836565b8083529260018116908115613389575060011461331e575b612833925003826127a6565b505f5160206137945f395f51905f525f90815290917f42ad5d3e1f2e6e70edcf6d991b8a3023d3fca8047a131592f9edb9fd9b89d57d5b81831061336d57505090602061283392820101613312565b6020919350806001915483858801015201910190918392613355565b6020925061283394915060ff191682840152151560051b820101613312565b6040515f5160206137f45f395f51905f5254815f6133c583612836565b808352926001811690811561338957506001146133e857612833925003826127a6565b505f5160206137f45f395f51905f525f90815290917f5f9ce34815f8e11431c7bb75a8e6886a91478f7ffc1dbb0a98dc240fddd76b755b81831061343757505090602061283392820101613312565b602091935080600191548385880101520191019091839261341f565b823b613461575b5050505050565b604051630a85bd0160e11b81526001600160a01b0391821660048201529181166024830152604482019390935260806064820152911691602090829081906134ad9060848301906126ee565b03815f865af15f918161350b575b506134e957506134c9612c23565b805190816134e45782633250574960e11b5f5260045260245ffd5b602001fd5b6001600160e01b03191663757a42ff60e11b0161312157505f8080808061345a565b61352591925060203d60201161315b5761314c81836127a6565b905f6134bb565b6001600160a01b039091168015159283613547575b50505090565b6001600160a01b038316821493509091831561358e575b508215613570575b50505f8080613541565b9091506001600160a01b039061358590612e37565b16145f80613566565b613599919350612d4f565b815f5260205260ff60405f205416915f61355e565b91907f7fffffffffffffffffffffffffffffff5d576e7357a4501ddfe92f46681b20a08411613630579160209360809260ff5f9560405194855216868401526040830152606082015282805260015afa15613625575f516001600160a01b0381161561361b57905f905f90565b505f906001905f90565b6040513d5f823e3d90fd5b5050505f9160039190565b60ff5f5160206138945f395f51905f525460401c161561365757565b631afcd79f60e31b5f5260045ffd5b61366e6132dd565b805190811561367e576020012090565b50507fa16a46d94261c7517cc8ff89f61c0ce93598e3c849801011dee649a6a557d1005480156136ab5790565b507fc5d2460186f7233c927e7db2dcc703c0e500b653ca82273b7bfad8045d85a47090565b6136d86133a8565b80519081156136e8576020012090565b50507fa16a46d94261c7517cc8ff89f61c0ce93598e3c849801011dee649a6a557d1015480156136ab5790565b90613739575080511561372a57602081519101fd5b63d6bda27560e01b5f5260045ffd5b8151158061376a575b61374a575090565b639996b31560e01b5f9081526001600160a01b0391909116600452602490fd5b50803b1561374256fe80bb2b638cc20bc4d0a60d66940f3ab4a00c1d7b313497ca82fb0b4ab0079300a16a46d94261c7517cc8ff89f61c0ce93598e3c849801011dee649a6a557d1029016d09d72d40fdae2fd8ceac6b6234c7706214fd39c1cd1e609a0528c199300a040f782729de4970518741823ec1276cbcd41a0c7493f62d173341566a04e01a16a46d94261c7517cc8ff89f61c0ce93598e3c849801011dee649a6a557d103360894a13ba1a3210667c828492db98dca3e2076cc3735a920a3ca505d382bbca040f782729de4970518741823ec1276cbcd41a0c7493f62d173341566a04e002c149ed548c6d2993cd73efe187df6eccabe4538091b33adbd25fafdb8a1468b80bb2b638cc20bc4d0a60d66940f3ab4a00c1d7b313497ca82fb0b4ab0079304f0c57e16840df040f15088dc2f81fe391c3923bec73e23a9662efc9c229c6a0080bb2b638cc20bc4d0a60d66940f3ab4a00c1d7b313497ca82fb0b4ab0079301a2646970667358221220cf4d6d8373d8e959adab780e0bb66e905e26799457eea841c36ddd41e5c6539d64736f6c634300081c0033f0c57e16840df040f15088dc2f81fe391c3923bec73e23a9662efc9c229c6a00" as const
