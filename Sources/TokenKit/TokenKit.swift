// The umbrella module: `import TokenKit` brings in all four modules.
@_exported public import AuthToken
@_exported public import NetworkRetry
@_exported public import Persistence
@_exported public import TokenRefresh
