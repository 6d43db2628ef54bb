/**
 * Generated from Basket.sol by scripts/compile-contracts.ts with solc-js 0.8.28+commit.7893614a.Emscripten.clang
 * (optimizer on, 200 runs, evm cancun). Do not edit by hand:
 * change the source and run `npm run contracts:compile`.
 */
export const basketPeriodEnforcerAbi = [
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
        "name": "delegationHash",
        "type": "bytes32"
      },
      {
        "indexed": true,
        "internalType": "address",
        "name": "token",
        "type": "address"
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
        "name": "normalised",
        "type": "uint256"
      },
      {
        "indexed": false,
        "internalType": "uint256",
        "name": "period",
        "type": "uint256"
      },
      {
        "indexed": false,
        "internalType": "uint256",
        "name": "spentInPeriod",
        "type": "uint256"
      }
    ],
    "name": "BasketSpent",
    "type": "event"
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
    "name": "allowances",
    "outputs": [
      {
        "internalType": "uint256",
        "name": "lastPeriod",
        "type": "uint256"
      },
      {
        "internalType": "uint256",
        "name": "spentInPeriod",
        "type": "uint256"
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
        "name": "",
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
        "name": "_delegationHash",
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
    "inputs": [
      {
        "internalType": "bytes",
        "name": "_terms",
        "type": "bytes"
      },
      {
        "internalType": "address",
        "name": "_token",
        "type": "address"
      }
    ],
    "name": "decimalsOf",
    "outputs": [
      {
        "internalType": "bool",
        "name": "found_",
        "type": "bool"
      },
      {
        "internalType": "uint8",
        "name": "decimals_",
        "type": "uint8"
      }
    ],
    "stateMutability": "pure",
    "type": "function"
  },
  {
    "inputs": [
      {
        "internalType": "bytes32",
        "name": "_delegationHash",
        "type": "bytes32"
      },
      {
        "internalType": "address",
        "name": "_delegationManager",
        "type": "address"
      },
      {
        "internalType": "bytes",
        "name": "_terms",
        "type": "bytes"
      }
    ],
    "name": "getAvailableAmount",
    "outputs": [
      {
        "internalType": "uint256",
        "name": "available_",
        "type": "uint256"
      },
      {
        "internalType": "uint256",
        "name": "spent_",
        "type": "uint256"
      },
      {
        "internalType": "uint256",
        "name": "currentPeriod_",
        "type": "uint256"
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
        "internalType": "uint256",
        "name": "periodAmount_",
        "type": "uint256"
      },
      {
        "internalType": "uint256",
        "name": "periodDuration_",
        "type": "uint256"
      },
      {
        "internalType": "uint256",
        "name": "startDate_",
        "type": "uint256"
      }
    ],
    "stateMutability": "pure",
    "type": "function"
  }
] as const

export const basketPeriodEnforcerBytecode = "0x6080604052348015600e575f5ffd5b50610f4b8061001c5f395ff3fe608060405234801561000f575f5ffd5b5060043610610085575f3560e01c8063a145832a11610058578063a145832a14610147578063b99deb0e1461015a578063d3eddcc5146100d1578063ed463367146100d1575f5ffd5b806324ece77a14610089578063414c3e33146100d157806356283e24146100ed5780636a9843f614610119575b5f5ffd5b6100b7610097366004610a35565b5f6020818152928152604080822090935290815220805460019091015482565b604080519283526020830191909152015b60405180910390f35b6100eb6100df366004610aa2565b50505050505050505050565b005b6101006100fb366004610b72565b61016d565b60408051921515835260ff9091166020830152016100c8565b61012c610127366004610bc2565b6102b4565b604080519384526020840192909252908201526060016100c8565b6100eb610155366004610aa2565b610358565b61012c610168366004610c18565b610461565b5f8060608411801561019357506015610187606086610c6b565b6101919190610c98565b155b6101b85760405162461bcd60e51b81526004016101af90610cab565b60405180910390fd5b60605b846101c7601583610cf4565b116102a4576001600160a01b0384168682876101e4826014610cf4565b926101f193929190610d07565b6101fa91610d2e565b60601c0361029257858561020f836014610cf4565b81811061021e5761021e610d7b565b919091013560f81c92505060128211156102885760405162461bcd60e51b815260206004820152602560248201527f4261736b6574506572696f64456e666f726365723a696e76616c69642d646563604482015264696d616c7360d81b60648201526084016101af565b60019250506102ac565b61029d601582610cf4565b90506101bb565b505f5f915091505b935093915050565b5f5f5f5f5f5f6102c48888610461565b925092509250804210156102e3575f5f5f95509550955050505061034e565b816102ee8242610c6b565b6102f89190610d8f565b610303906001610cf4565b6001600160a01b038a165f908152602081815260408083208e845290915290208054919550908514610335575f61033b565b80600101545b95506103478685610c6b565b9650505050505b9450945094915050565b6001600160f81b03198616156103bf5760405162461bcd60e51b815260206004820152602660248201527f4261736b6574506572696f64456e666f726365723a696e76616c69642d63616c6044820152656c2d7479706560d01b60648201526084016101af565b6001600160f81b0319600887901b161561042f5760405162461bcd60e51b815260206004820152602b60248201527f4261736b6574506572696f64456e666f726365723a696e76616c69642d65786560448201526a637574696f6e2d7479706560a81b60648201526084016101af565b5f5f5f61043e8d8d8a8a61061c565b9250925092506104528d8d88868686610869565b50505050505050505050505050565b5f80806060841180156104885750601561047c606086610c6b565b6104869190610c98565b155b6104a45760405162461bcd60e51b81526004016101af90610cab565b6104b160205f8688610d07565b6104ba91610da2565b92506104ca604060208688610d07565b6104d391610da2565b91506104e3606060408688610d07565b6104ec91610da2565b90505f83900361054f5760405162461bcd60e51b815260206004820152602860248201527f4261736b6574506572696f64456e666f726365723a696e76616c69642d7a65726044820152671bcb585b5bdd5b9d60c21b60648201526084016101af565b815f036105b15760405162461bcd60e51b815260206004820152602a60248201527f4261736b6574506572696f64456e666f726365723a696e76616c69642d7a65726044820152693796b23ab930ba34b7b760b11b60648201526084016101af565b805f036106155760405162461bcd60e51b815260206004820152602c60248201527f4261736b6574506572696f64456e666f726365723a696e76616c69642d7a657260448201526b6f2d73746172742d6461746560a01b60648201526084016101af565b9250925092565b5f808060348410156106865760405162461bcd60e51b815260206004820152602d60248201527f4261736b6574506572696f64456e666f726365723a696e76616c69642d65786560448201526c0c6eae8d2dedc5ad8cadccee8d609b1b60648201526084016101af565b610694603460148688610d07565b61069d91610da2565b156106f55760405162461bcd60e51b815260206004820152602260248201527f4261736b6574506572696f64456e666f726365723a696e76616c69642d76616c604482015261756560f01b60648201526084016101af565b365f610704866034818a610d07565b909250905060448114801561073e575063a9059cbb60e01b61072960045f8486610d07565b61073291610dbf565b6001600160e01b031916145b6107965760405162461bcd60e51b815260206004820152602360248201527f4261736b6574506572696f64456e666f726365723a696e76616c69642d6d65746044820152621a1bd960ea1b60648201526084016101af565b6107a360145f888a610d07565b6107ac91610d2e565b60601c94505f5f6107be8b8b8961016d565b91509150816108205760405162461bcd60e51b815260206004820152602860248201527f4261736b6574506572696f64456e666f726365723a746f6b656e2d6e6f742d696044820152671b8b58985cdad95d60c21b60648201526084016101af565b61082e604460248587610d07565b61083791610da2565b9450610844816012610df5565b61084f90600a610ee9565b6108599086610efe565b9550505050509450945094915050565b5f5f5f6108768989610461565b925092509250804210156108de5760405162461bcd60e51b815260206004820152602960248201527f4261736b6574506572696f64456e666f726365723a7472616e736665722d6e6f6044820152681d0b5cdd185c9d195960ba1b60648201526084016101af565b5f826108ea8342610c6b565b6108f49190610d8f565b6108ff906001610cf4565b335f908152602081815260408083208c845290915281208054929350918314610928575f61092e565b81600101545b905061093a8187610c6b565b88111561099d5760405162461bcd60e51b815260206004820152602b60248201527f4261736b6574506572696f64456e666f726365723a6261736b65742d616d6f7560448201526a1b9d0b595e18d95959195960aa1b60648201526084016101af565b8282556109aa8882610cf4565b60018301556001600160a01b0389168a337f0236f6d26993c7cade95bde94a3644851d7990173a8c97d255a008cfb7b7ac568a8c886109e98289610cf4565b60408051948552602085019390935291830152606082015260800160405180910390a4505050505050505050505050565b80356001600160a01b0381168114610a30575f5ffd5b919050565b5f5f60408385031215610a46575f5ffd5b610a4f83610a1a565b946020939093013593505050565b5f5f83601f840112610a6d575f5ffd5b50813567ffffffffffffffff811115610a84575f5ffd5b602083019150836020828501011115610a9b575f5ffd5b9250929050565b5f5f5f5f5f5f5f5f5f5f60e08b8d031215610abb575f5ffd5b8a3567ffffffffffffffff811115610ad1575f5ffd5b610add8d828e01610a5d565b909b5099505060208b013567ffffffffffffffff811115610afc575f5ffd5b610b088d828e01610a5d565b90995097505060408b0135955060608b013567ffffffffffffffff811115610b2e575f5ffd5b610b3a8d828e01610a5d565b90965094505060808b01359250610b5360a08c01610a1a565b9150610b6160c08c01610a1a565b90509295989b9194979a5092959850565b5f5f5f60408486031215610b84575f5ffd5b833567ffffffffffffffff811115610b9a575f5ffd5b610ba686828701610a5d565b9094509250610bb9905060208501610a1a565b90509250925092565b5f5f5f5f60608587031215610bd5575f5ffd5b84359350610be560208601610a1a565b9250604085013567ffffffffffffffff811115610c00575f5ffd5b610c0c87828801610a5d565b95989497509550505050565b5f5f60208385031215610c29575f5ffd5b823567ffffffffffffffff811115610c3f575f5ffd5b610c4b85828601610a5d565b90969095509350505050565b634e487b7160e01b5f52601160045260245ffd5b81810381811115610c7e57610c7e610c57565b92915050565b634e487b7160e01b5f52601260045260245ffd5b5f82610ca657610ca6610c84565b500690565b60208082526029908201527f4261736b6574506572696f64456e666f726365723a696e76616c69642d7465726040820152680dae65ad8cadccee8d60bb1b606082015260800190565b80820180821115610c7e57610c7e610c57565b5f5f85851115610d15575f5ffd5b83861115610d21575f5ffd5b5050820193919092039150565b80356bffffffffffffffffffffffff198116906014841015610d74576bffffffffffffffffffffffff196bffffffffffffffffffffffff198560140360031b1b82161691505b5092915050565b634e487b7160e01b5f52603260045260245ffd5b5f82610d9d57610d9d610c84565b500490565b80356020831015610c7e575f19602084900360031b1b1692915050565b80356001600160e01b03198116906004841015610d74576001600160e01b031960049490940360031b84901b1690921692915050565b60ff8281168282160390811115610c7e57610c7e610c57565b6001815b60018411156102ac57808504811115610e2d57610e2d610c57565b6001841615610e3b57908102905b60019390931c928002610e12565b5f82610e5757506001610c7e565b81610e6357505f610c7e565b8160018114610e795760028114610e8357610e9f565b6001915050610c7e565b60ff841115610e9457610e94610c57565b50506001821b610c7e565b5060208310610133831016604e8410600b8410161715610ec2575081810a610c7e565b610ece5f198484610e0e565b805f1904821115610ee157610ee1610c57565b029392505050565b5f610ef760ff841683610e49565b9392505050565b8082028115828204841417610c7e57610c7e610c5756fea2646970667358221220ba7dd29ca543b190c045e9f636ca7d5f75bd6cb2a68629f9ba5e8a9ea989fcf464736f6c634300081c0033" as const
