import AuthToken
import Foundation
import HTTPTypes
import Logging

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// The HTTP status an error reports: TokenKit's ``APIError``, or an app's own error type in one of the shapes apps
/// give it.
///
/// An app that keeps its own `APIError` after `import TokenKit` shadows TokenKit's, so its client throws a type
/// TokenKit never declared. These are recognised, in this order:
/// - TokenKit's ``APIError``: its ``APIError/statusCode``;
/// - an enum case named `unauthorized` (any letter case, with or without associated values): 401;
/// - an `HTTPURLResponse` or `HTTPResponse` the error carries: its status;
/// - an integer the error carries under the label `statusCode`, `status`, `httpStatus` or `httpStatusCode`,
///   between 100 and 599. A bare `code` is not read: apps use it for their own codes (a validation code of 401 is
///   not an HTTP 401).
///
/// The error is looked into through `Mirror`, two levels deep. Anything else is `nil`.
///
/// - Parameter error: The error.
/// - Returns: The status, or `nil`.
func recognizedHTTPStatus(of error: any Error) -> Int? {
    if let error = error as? APIError { return error.statusCode }
    let mirror = Mirror(reflecting: error)
    if mirror.displayStyle == .enum {
        // A case with associated values is the mirror's one child, labelled with the case's name. A case without
        // them prints as its bare name unless the type describes itself.
        let caseName = mirror.children.first?.label ?? String(describing: error)
        if caseName.lowercased() == "unauthorized" { return 401 }
    }
    return status(in: mirror, depth: 2)
}

/// The status a response or a status-like integer inside `mirror`'s children gives, looking `depth` levels down.
private func status(in mirror: Mirror, depth: Int) -> Int? {
    guard depth > 0 else { return nil }
    for child in mirror.children {
        if let response = child.value as? HTTPURLResponse { return response.statusCode }
        if let response = child.value as? HTTPResponse { return response.status.code }
        if let label = child.label?.lowercased(), statusLabels.contains(label), let code = child.value as? Int,
            (100...599).contains(code)
        {
            return code
        }
    }
    for child in mirror.children {
        let inner = Mirror(reflecting: child.value)
        // A tuple of associated values (`case apiError(statusCode: Int, message: String)`) or a nested struct.
        if let found = status(in: inner, depth: depth - 1) { return found }
    }
    return nil
}

/// The labels under which an error type keeps an HTTP status.
private let statusLabels: Set<String> = ["statuscode", "status", "httpstatus", "httpstatuscode"]

/// A notice, once per type, when the network client throws an error of a type named `APIError` that is not
/// TokenKit's and reports no status that ``recognizedHTTPStatus(of:)`` can read: the app's own `APIError` shadows
/// TokenKit's, and a 401 it stands for would go unrefreshed.
enum ShadowedAPIErrorNotice {
    /// The types already noted.
    private static let noted = LockedValue<Set<String>>([])

    /// Logs the notice for `error`'s type, the first time only.
    static func noteIfShadowed(_ error: any Error, status: Int?, logger: Logger) {
        guard status == nil, !(error is APIError) else { return }
        let type = String(reflecting: Swift.type(of: error))
        guard type.hasSuffix(".APIError") || type == "APIError" else { return }
        guard noted.withLock({ $0.insert(type).inserted }) else { return }
        logger.warning(
            """
            executeWithAutoRetry: the network client threw \(type), which is not TokenKit's APIError and reports no \
            HTTP status TokenKit can read; a 401 it stands for is not refreshed. Throw an enum case named \
            `unauthorized`, return the 401 response, or implement httpStatus(of:) in the network client.
            """,
            metadata: ["errorType": "\(type)"])
    }
}
