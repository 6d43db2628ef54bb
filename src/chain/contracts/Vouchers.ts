/**
 * Generated from Vouchers.sol by scripts/compile-contracts.ts with solc-js 0.8.28+commit.7893614a.Emscripten.clang
 * (optimizer on, 200 runs, evm cancun). Do not edit by hand:
 * change the source and run `npm run contracts:compile`.
 */
export const voucherEnforcerAbi = [
  {
    "anonymous": false,
    "inputs": [
      {
        "indexed": true,
        "internalType": "address",
        "name": "sender",
        "type": "address"
      },
      {
        "indexed": true,
        "internalType": "bytes32",
        "name": "channel",
        "type": "bytes32"
      },
      {
        "indexed": true,
        "internalType": "address",
        "name": "payTo",
        "type": "address"
      },
      {
        "indexed": false,
        "internalType": "uint256",
        "name": "cumulativeAmount",
        "type": "uint256"
      },
      {
        "indexed": false,
        "internalType": "uint256",
        "name": "amount",
        "type": "uint256"
      },
      {
        "indexed": false,
        "internalType": "uint256",
        "name": "nonce",
        "type": "uint256"
      }
    ],
    "name": "VoucherSettled",
    "type": "event"
  },
  {
    "inputs": [],
    "name": "VOUCHER_TYPEHASH",
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
    "inputs": [
      {
        "internalType": "bytes",
        "name": "",
        "type": "bytes"
      },
      {
        "internalType": "bytes",
        "name": "",
        "type": "bytes"
      },
      {
        "internalType": "bytes32",
        "name": "",
        "type": "bytes32"
      },
      {
        "internalType": "bytes",
        "name": "",
        "type": "bytes"
      },
      {
        "internalType": "bytes32",
        "name": "",
        "type": "bytes32"
      },
      {
        "internalType": "address",
        "name": "",
        "type": "address"
      },
      {
        "internalType": "address",
        "name": "",
        "type": "address"
      }
    ],
    "name": "afterAllHook",
    "outputs": [],
    "stateMutability": "pure",
    "type": "function"
  },
  {
    "inputs": [
      {
        "internalType": "bytes",
        "name": "",
        "type": "bytes"
      },
      {
        "internalType": "bytes",
        "name": "",
        "type": "bytes"
      },
      {
        "internalType": "bytes32",
        "name": "",
        "type": "bytes32"
      },
      {
        "internalType": "bytes",
        "name": "",
        "type": "bytes"
      },
      {
        "internalType": "bytes32",
        "name": "",
        "type": "bytes32"
      },
      {
        "internalType": "address",
        "name": "",
        "type": "address"
      },
      {
        "internalType": "address",
        "name": "",
        "type": "address"
      }
    ],
    "name": "afterHook",
    "outputs": [],
    "stateMutability": "pure",
    "type": "function"
  },
  {
    "inputs": [
      {
        "internalType": "bytes",
        "name": "",
        "type": "bytes"
      },
      {
        "internalType": "bytes",
        "name": "",
        "type": "bytes"
      },
      {
        "internalType": "bytes32",
        "name": "",
        "type": "bytes32"
      },
      {
        "internalType": "bytes",
        "name": "",
        "type": "bytes"
      },
      {
        "internalType": "bytes32",
        "name": "",
        "type": "bytes32"
      },
      {
        "internalType": "address",
        "name": "",
        "type": "address"
      },
      {
        "internalType": "address",
        "name": "",
        "type": "address"
      }
    ],
    "name": "beforeAllHook",
    "outputs": [],
    "stateMutability": "pure",
    "type": "function"
  },
  {
    "inputs": [
      {
        "internalType": "bytes",
        "name": "_terms",
        "type": "bytes"
      },
      {
        "internalType": "bytes",
        "name": "_args",
        "type": "bytes"
      },
      {
        "internalType": "bytes32",
        "name": "_mode",
        "type": "bytes32"
      },
      {
        "internalType": "bytes",
        "name": "_executionCallData",
        "type": "bytes"
      },
      {
        "internalType": "bytes32",
        "name": "",
        "type": "bytes32"
      },
      {
        "internalType": "address",
        "name": "",
        "type": "address"
      },
      {
        "internalType": "address",
        "name": "",
        "type": "address"
      }
    ],
    "name": "beforeHook",
    "outputs": [],
    "stateMutability": "nonpayable",
    "type": "function"
  },
  {
    "inputs": [],
    "name": "domainSeparator",
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
    "inputs": [
      {
        "internalType": "bytes",
        "name": "_terms",
        "type": "bytes"
      }
    ],
    "name": "getTermsInfo",
    "outputs": [
      {
        "internalType": "address",
        "name": "signer_",
        "type": "address"
      },
      {
        "internalType": "address",
        "name": "token_",
        "type": "address"
      },
      {
        "internalType": "address",
        "name": "payTo_",
        "type": "address"
      },
      {
        "internalType": "uint256",
        "name": "cap_",
        "type": "uint256"
      }
    ],
    "stateMutability": "pure",
    "type": "function"
  },
  {
    "inputs": [
      {
        "internalType": "address",
        "name": "",
        "type": "address"
      },
      {
        "internalType": "bytes32",
        "name": "",
        "type": "bytes32"
      }
    ],
    "name": "settled",
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
    "inputs": [
      {
        "internalType": "bytes32",
        "name": "_channel",
        "type": "bytes32"
      },
      {
        "internalType": "uint256",
        "name": "_cumulativeAmount",
        "type": "uint256"
      },
      {
        "internalType": "uint256",
        "name": "_nonce",
        "type": "uint256"
      }
    ],
    "name": "voucherDigest",
    "outputs": [
      {
        "internalType": "bytes32",
        "name": "",
        "type": "bytes32"
      }
    ],
    "stateMutability": "view",
    "type": "function"
  }
] as const

export const voucherEnforcerBytecode = "0x6080604052348015600e575f5ffd5b50610ec08061001c5f395ff3fe608060405234801561000f575f5ffd5b5060043610610090575f3560e01c8063a145832a11610063578063a145832a14610124578063b99deb0e14610137578063d3eddcc514610094578063ed46336714610094578063f698da251461017f575f5ffd5b8063414c3e331461009457806386ce0c8e146100b057806386efd7ea146100d657806394739e87146100fd575b5f5ffd5b6100ae6100a2366004610b47565b50505050505050505050565b005b6100c36100be366004610c17565b610187565b6040519081526020015b60405180910390f35b6100c36100e4366004610c40565b5f60208181529281526040808220909352908152205481565b6100c37fedd869ac37f7e6be42809bbde7b3e2b9c973f31b89c832760785440856458d9181565b6100ae610132366004610b47565b61022c565b61014a610145366004610c68565b61030c565b6040516100cd94939291906001600160a01b039485168152928416602084015292166040820152606081019190915260800190565b6100c36103e1565b604080517fedd869ac37f7e6be42809bbde7b3e2b9c973f31b89c832760785440856458d91602082015290810184905260608101839052608081018290525f90819060a0016040516020818303038152906040528051906020012090506101ec6103e1565b60405161190160f01b6020820152602281019190915260428101829052606201604051602081830303815290604052805190602001209150509392505050565b6001600160f81b03198616156102935760405162461bcd60e51b815260206004820152602160248201527f566f7563686572456e666f726365723a696e76616c69642d63616c6c2d7479706044820152606560f81b60648201526084015b60405180910390fd5b6001600160f81b0319600887901b16156102fe5760405162461bcd60e51b815260206004820152602660248201527f566f7563686572456e666f726365723a696e76616c69642d657865637574696f6044820152656e2d7479706560d01b606482015260840161028a565b6100a28a8a8a8a8989610485565b5f808080607c851461036c5760405162461bcd60e51b8152602060048201526024808201527f566f7563686572456e666f726365723a696e76616c69642d7465726d732d6c656044820152630dccee8d60e31b606482015260840161028a565b61037960145f8789610ca7565b61038291610cce565b60601c9350610395602860148789610ca7565b61039e91610cce565b60601c92506103b1603c60288789610ca7565b6103ba91610cce565b60601c91506103cd605c603c8789610ca7565b6103d691610d1b565b939692955090935050565b604080517f8b73c3c69bb8fe3d512ecc4cf759cc79239f7b179b0ffacaa9a75d522b39400f60208201527f637077b93a8e1473bab10b0f12d130c307c0e7d8398d1eb8ee14691acfceb367918101919091527fc89efdaa54c0f20c7adf612882df0950f5a951637e0307cdcb4c672f298b8bc660608201524660808201523060a08201525f9060c00160405160208183030381529060405280519060200120905090565b5f61049287878585610619565b90505f87876040516104a5929190610d39565b604051809103902090505f5f6104be8a8a858b8b610891565b335f90815260208181526040808320888452909152902054919350915080831161053a5760405162461bcd60e51b815260206004820152602760248201527f566f7563686572456e666f726365723a766f75636865722d616c72656164792d6044820152661cd95d1d1b195960ca1b606482015260840161028a565b6105448184610d48565b85146105925760405162461bcd60e51b815260206004820152601e60248201527f566f7563686572456e666f726365723a696e76616c69642d616d6f756e740000604482015260640161028a565b335f9081526020818152604080832087845290915290208390556105ba603c60288c8e610ca7565b6105c391610cce565b6040805185815260208101889052908101849052606091821c91869133917fb519afea6f09d659abbafabd1cb2cb86a21d97c185d212a8612242cb1305f601910160405180910390a45050505050505050505050565b5f5f5f610626878761030c565b509093509150506078841461068e5760405162461bcd60e51b815260206004820152602860248201527f566f7563686572456e666f726365723a696e76616c69642d657865637574696f6044820152670dc5ad8cadccee8d60c31b606482015260840161028a565b6001600160a01b0382166106a560145f8789610ca7565b6106ae91610cce565b60601c146106fe5760405162461bcd60e51b815260206004820152601d60248201527f566f7563686572456e666f726365723a696e76616c69642d746f6b656e000000604482015260640161028a565b61070c603460148688610ca7565b61071591610d1b565b1561076c5760405162461bcd60e51b815260206004820152602160248201527f566f7563686572456e666f726365723a76616c75652d6e6f742d616c6c6f77656044820152601960fa1b606482015260840161028a565b365f61077b866034818a610ca7565b909250905063a9059cbb60e01b61079560045f8486610ca7565b61079e91610d67565b6001600160e01b031916146107f55760405162461bcd60e51b815260206004820152601e60248201527f566f7563686572456e666f726365723a696e76616c69642d6d6574686f640000604482015260640161028a565b6001600160a01b03831661080d602460048486610ca7565b61081691610d1b565b1461086d5760405162461bcd60e51b815260206004820152602160248201527f566f7563686572456e666f726365723a696e76616c69642d726563697069656e6044820152601d60fa1b606482015260840161028a565b61087b604460248385610ca7565b61088491610d1b565b9998505050505050505050565b5f8060606108a184860186610db1565b919450925090506108b6605c603c898b610ca7565b6108bf91610d1b565b83111561090e5760405162461bcd60e51b815260206004820152601c60248201527f566f7563686572456e666f726365723a6361702d657863656564656400000000604482015260640161028a565b5f5f61092461091e898787610187565b846109d6565b5090925090505f81600381111561093d5761093d610e76565b148015610973575061095260145f8b8d610ca7565b61095b91610cce565b60601c6001600160a01b0316826001600160a01b0316145b6109c95760405162461bcd60e51b815260206004820152602160248201527f566f7563686572456e666f726365723a696e76616c69642d7369676e617475726044820152606560f81b606482015260840161028a565b5050509550959350505050565b5f5f5f8351604103610a0d576020840151604085015160608601515f1a6109ff88828585610a1f565b955095509550505050610a18565b505081515f91506002905b9250925092565b5f80807f7fffffffffffffffffffffffffffffff5d576e7357a4501ddfe92f46681b20a0841115610a5857505f91506003905082610add565b604080515f808252602082018084528a905260ff891692820192909252606081018790526080810186905260019060a0016020604051602081039080840390855afa158015610aa9573d5f5f3e3d5ffd5b5050604051601f1901519150506001600160a01b038116610ad457505f925060019150829050610add565b92505f91508190505b9450945094915050565b5f5f83601f840112610af7575f5ffd5b50813567ffffffffffffffff811115610b0e575f5ffd5b602083019150836020828501011115610b25575f5ffd5b9250929050565b80356001600160a01b0381168114610b42575f5ffd5b919050565b5f5f5f5f5f5f5f5f5f5f60e08b8d031215610b60575f5ffd5b8a3567ffffffffffffffff811115610b76575f5ffd5b610b828d828e01610ae7565b909b5099505060208b013567ffffffffffffffff811115610ba1575f5ffd5b610bad8d828e01610ae7565b90995097505060408b0135955060608b013567ffffffffffffffff811115610bd3575f5ffd5b610bdf8d828e01610ae7565b90965094505060808b01359250610bf860a08c01610b2c565b9150610c0660c08c01610b2c565b90509295989b9194979a5092959850565b5f5f5f60608486031215610c29575f5ffd5b505081359360208301359350604090920135919050565b5f5f60408385031215610c51575f5ffd5b610c5a83610b2c565b946020939093013593505050565b5f5f60208385031215610c79575f5ffd5b823567ffffffffffffffff811115610c8f575f5ffd5b610c9b85828601610ae7565b90969095509350505050565b5f5f85851115610cb5575f5ffd5b83861115610cc1575f5ffd5b5050820193919092039150565b80356bffffffffffffffffffffffff198116906014841015610d14576bffffffffffffffffffffffff196bffffffffffffffffffffffff198560140360031b1b82161691505b5092915050565b80356020831015610d33575f19602084900360031b1b165b92915050565b818382375f9101908152919050565b81810381811115610d3357634e487b7160e01b5f52601160045260245ffd5b80356001600160e01b03198116906004841015610d14576001600160e01b031960049490940360031b84901b1690921692915050565b634e487b7160e01b5f52604160045260245ffd5b5f5f5f60608486031215610dc3575f5ffd5b8335925060208401359150604084013567ffffffffffffffff811115610de7575f5ffd5b8401601f81018613610df7575f5ffd5b803567ffffffffffffffff811115610e1157610e11610d9d565b604051601f8201601f19908116603f0116810167ffffffffffffffff81118282101715610e4057610e40610d9d565b604052818152828201602001881015610e57575f5ffd5b816020840160208301375f602083830101528093505050509250925092565b634e487b7160e01b5f52602160045260245ffdfea2646970667358221220776ddb80f4169c5d9c6a88596d6ebc4e5e1870003d016f70dd3fa76cc28d71de64736f6c634300081c0033" as const
