// swift-format-ignore-file
// Not a target: a stand-in for the part of Apple's AuthenticationServices module that TokenKitSignIn's
// WebAuthenticationSessionUserAgent uses, for .ci/apple-typecheck on Linux. Only those symbols; signatures as Apple
// documents them (availability as documented: macOS 10.15, iOS 12, visionOS 1; the `Callback` API macOS 14.4,
// iOS 17.4, visionOS 1.1), no behaviour. NSObject and NSObjectProtocol are Foundation's; the window is the UIKit
// stub's UIWindow, as on iOS.
//   https://developer.apple.com/documentation/authenticationservices/aswebauthenticationsession
//   https://developer.apple.com/documentation/authenticationservices/aswebauthenticationsession/init(url:callbackurlscheme:completionhandler:)
//     init(url URL: URL, callbackURLScheme: String?, completionHandler: @escaping CompletionHandler)
//   https://developer.apple.com/documentation/authenticationservices/aswebauthenticationsession/init(url:callback:completionhandler:)
//     init(url URL: URL, callback: ASWebAuthenticationSession.Callback, completionHandler: @escaping CompletionHandler)
//   https://developer.apple.com/documentation/authenticationservices/aswebauthenticationsession/completionhandler
//     typealias CompletionHandler = (URL?, (any Error)?) -> Void
//   https://developer.apple.com/documentation/authenticationservices/aswebauthenticationsession/callback
//     static func customScheme(_ customScheme: String) -> Callback; static func https(host: String, path: String) -> Callback
//   https://developer.apple.com/documentation/authenticationservices/aswebauthenticationsession/prefersephemeralwebbrowsersession
//   https://developer.apple.com/documentation/authenticationservices/aswebauthenticationsession/presentationcontextprovider
//   https://developer.apple.com/documentation/authenticationservices/aswebauthenticationsession/start()
//     func start() -> Bool
//   https://developer.apple.com/documentation/authenticationservices/aswebauthenticationsession/cancel()
//   https://developer.apple.com/documentation/authenticationservices/aswebauthenticationpresentationcontextproviding
//     func presentationAnchor(for session: ASWebAuthenticationSession) -> ASPresentationAnchor
//   https://developer.apple.com/documentation/authenticationservices/aspresentationanchor
//     typealias ASPresentationAnchor = UIWindow (NSWindow on macOS)
//   https://developer.apple.com/documentation/authenticationservices/aswebauthenticationsessionerror
//   https://developer.apple.com/documentation/authenticationservices/aswebauthenticationsessionerror-swift.struct/code
//     case canceledLogin = 1, presentationContextNotProvided = 2, presentationContextInvalid = 3
@_exported import Foundation
import UIKit

public typealias ASPresentationAnchor = UIWindow

@available(macOS 10.15, iOS 12, visionOS 1, *)
public protocol ASWebAuthenticationPresentationContextProviding: NSObjectProtocol {
    func presentationAnchor(for session: ASWebAuthenticationSession) -> ASPresentationAnchor
}

@available(macOS 10.15, iOS 12, visionOS 1, *)
open class ASWebAuthenticationSession: NSObject {
    public typealias CompletionHandler = (URL?, (any Error)?) -> Void

    @available(macOS 14.4, iOS 17.4, visionOS 1.1, *)
    public struct Callback: Sendable {
        public static func customScheme(_ customScheme: String) -> Callback { Callback() }
        public static func https(host: String, path: String) -> Callback { Callback() }
    }

    public init(url URL: URL, callbackURLScheme: String?, completionHandler: @escaping CompletionHandler) {}
    @available(macOS 14.4, iOS 17.4, visionOS 1.1, *)
    public init(url URL: URL, callback: Callback, completionHandler: @escaping CompletionHandler) {}

    public weak var presentationContextProvider: (any ASWebAuthenticationPresentationContextProviding)?
    public var prefersEphemeralWebBrowserSession: Bool = false
    public var canStart: Bool { true }
    public func start() -> Bool { true }
    public func cancel() {}
}

public struct ASWebAuthenticationSessionError: Error, Sendable {
    public enum Code: Int, Sendable {
        case canceledLogin = 1
        case presentationContextNotProvided = 2
        case presentationContextInvalid = 3
    }
    public var code: Code
}
