/**
 * Generated from erc8004/ERC1967Proxy.sol by scripts/compile-contracts.ts with solc-js 0.8.28+commit.7893614a.Emscripten.clang
 * (optimizer on, 200 runs, evm shanghai, via-IR). Do not edit by hand:
 * change the source and run `npm run contracts:compile`.
 */
export const eRC1967ProxyAbi = [
  {
    "inputs": [
      {
        "internalType": "address",
        "name": "implementation",
        "type": "address"
      },
      {
        "internalType": "bytes",
        "name": "_data",
        "type": "bytes"
      }
    ],
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
    "inputs": [],
    "name": "FailedCall",
    "type": "error"
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
    "stateMutability": "payable",
    "type": "fallback"
  }
] as const

export const eRC1967ProxyBytecode = "0x608060405234610174575f6102ad908138038061001b81610178565b938439820191604081840312610174578051906001600160a01b03821690818303610174576020810151906001600160401b038211610174570184601f820112156101745780519061007461006f836101b1565b610178565b9582875260208383010111610174575f5b82811061015f57505060205f9186010152813b1561014d577f360894a13ba1a3210667c828492db98dca3e2076cc3735a920a3ca505d382bbc80546001600160a01b031916821790557fbc7cd75a20ee27fd9adebab32041f755214dbc6bffa90cc0225b39da2e5c2d3b5f80a282511561014557818084602061012c96519101845af4903d1561013c573d61011c61006f826101b1565b908152809360203d92013e6101cc565b505b6040516082908161022b8239f35b606092506101cc565b50505061012e565b634c9c8ce360e01b5f5260045260245ffd5b80602080928401015182828a01015201610085565b5f80fd5b6040519190601f01601f191682016001600160401b0381118382101761019d57604052565b634e487b7160e01b5f52604160045260245ffd5b6001600160401b03811161019d57601f01601f191660200190565b906101f057508051156101e157602081519101fd5b63d6bda27560e01b5f5260045ffd5b81511580610221575b610201575090565b639996b31560e01b5f9081526001600160a01b0391909116600452602490fd5b50803b156101f956fe60806040527f360894a13ba1a3210667c828492db98dca3e2076cc3735a920a3ca505d382bbc545f9081906001600160a01b0316368280378136915af43d5f803e156048573d5ff35b3d5ffdfea2646970667358221220db02b4f81a4ee49cde1dd24a1410c2dddfb307082357c3f5e624609345b3360964736f6c634300081c0033" as const
