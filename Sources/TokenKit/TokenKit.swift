// The umbrella module: `import TokenKit` brings in the four core modules, TokenKitCompatibility (FitIQ and Lume
// call shapes) and TokenKitScreens (messages and models for app screens), and what their public signatures need for
// the common path: Foundation (`URL`, `Data`, `Date`; FoundationNetworking's URLSession on Linux) and
// swift-http-types (`HTTPRequest`, `HTTPResponse`, `HTTPFields`, and `HTTPRequest(url:)`, which HTTPTypes declares
// under its `FoundationURL` trait; Package.swift asks for that trait by name).
@_exported public import AuthToken
@_exported public import Foundation
@_exported public import HTTPTypes
@_exported public import NetworkRetry
@_exported public import Persistence
@_exported public import TokenKitCompatibility
@_exported public import TokenKitScreens
@_exported public import TokenRefresh

#if canImport(FoundationNetworking)
    @_exported public import FoundationNetworking
#endif
