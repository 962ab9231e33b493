// The umbrella module: `import TokenKit` is enough for an app. It re-exports the four core modules,
// TokenKitCompatibility (FitIQ and Lume call shapes) and TokenKitScreens (messages and models for app screens), and,
// by name, the Foundation and swift-http-types types their public signatures and the common path need. Foundation
// and HTTPTypes themselves are not re-exported: a file that needs more of them imports them.

// The core modules and the app add-ons the umbrella carries.
@_exported public import AuthToken
@_exported public import NetworkRetry
@_exported public import Persistence
@_exported public import TokenKitCompatibility
@_exported public import TokenKitScreens
@_exported public import TokenRefresh

// Foundation: the values of the public signatures (addresses, bytes, instants, durations, identifiers), the JSON
// coders of a custom strategy, and the process environment an app reads its configuration from.
@_exported public import struct Foundation.Data
@_exported public import struct Foundation.Date
@_exported public import class Foundation.JSONDecoder
@_exported public import class Foundation.JSONEncoder
@_exported public import class Foundation.ProcessInfo
@_exported public import typealias Foundation.TimeInterval
@_exported public import struct Foundation.URL
@_exported public import struct Foundation.UUID
// swift-http-types: the request and response an `HTTPTransport` sends and receives. `HTTPRequest(url:)` comes with
// `HTTPRequest` (HTTPTypes declares it under its `FoundationURL` trait; Package.swift asks for that trait by name).
@_exported public import struct HTTPTypes.HTTPField
@_exported public import struct HTTPTypes.HTTPFields
@_exported public import struct HTTPTypes.HTTPRequest
@_exported public import struct HTTPTypes.HTTPResponse

// URLSession, for `URLSessionTransport(session:)`, and URLRequest: FoundationNetworking's on Linux.
#if canImport(FoundationNetworking)
    @_exported public import class FoundationNetworking.URLSession
    @_exported public import struct FoundationNetworking.URLRequest
#else
    @_exported public import class Foundation.URLSession
    @_exported public import struct Foundation.URLRequest
#endif
