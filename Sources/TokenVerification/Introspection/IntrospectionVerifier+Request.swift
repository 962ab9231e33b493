public import Foundation

extension IntrospectionVerifier {
    /// The introspection request: a POST of a form to ``Configuration/endpoint``.
    ///
    /// Its description and mirror name the URL and the header names only: the body holds the token (and, with
    /// ``ClientAuthentication/clientSecretPost(id:secret:)``, the client secret), and `Authorization` the
    /// credentials.
    public struct Request: Sendable, CustomStringConvertible, CustomReflectable {
        /// The endpoint.
        public let url: URL
        /// `Content-Type`, `Accept` and, for Basic or Bearer authentication, `Authorization`.
        public let headerFields: [(name: String, value: String)]
        /// The form: `token`, `token_type_hint` and, for `client_secret_post`, the client credentials.
        public let body: Data
        /// The largest answer body to read, ``Configuration/maximumResponseBytes``: a send stops reading past it
        /// and throws `URLError(.dataLengthExceedsMaximum)`, as ``urlSessionSend(configuration:)`` does, so a
        /// hostile endpoint cannot make it buffer without bound.
        public let maximumResponseBytes: Int

        /// `POST <url>` and the header names.
        public var description: String {
            "IntrospectionVerifier.Request(POST \(url.absoluteString), headers: \(headerFields.map(\.name)))"
        }

        /// A mirror without the body or any header value.
        public var customMirror: Mirror {
            Mirror(self, children: ["url": url, "headers": headerFields.map(\.name)])
        }
    }

    /// The endpoint's answer.
    public struct Response: Sendable {
        /// The HTTP status.
        public var status: Int
        /// The body.
        public var body: Data

        /// An answer.
        ///
        /// - Parameters:
        ///   - status: The HTTP status.
        ///   - body: The body.
        public init(status: Int, body: Data) {
            self.status = status
            self.body = body
        }
    }

    /// Sends the introspection request and returns the answer, whatever its status; throw only when there is none.
    public typealias Send = @Sendable (Request) async throws -> Response
}
