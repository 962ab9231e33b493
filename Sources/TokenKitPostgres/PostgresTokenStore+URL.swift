// Compiled only with the `PostgresStore` package trait.
#if PostgresStore
import Foundation
public import PostgresNIO

extension PostgresTokenStore {
    /// A client configuration from a `postgres://USER[:PASSWORD]@HOST[:PORT][/DATABASE]` URL, with TLS off: for a
    /// server on loopback (tests, `.ci/postgres`, the examples). A server elsewhere needs a configuration with TLS.
    ///
    /// - Parameter url: The URL; the port defaults to 5432.
    /// - Returns: The configuration, or `nil` when the URL has no host or no user.
    public static func loopbackClientConfiguration(url: String) -> PostgresClient.Configuration? {
        guard let components = URLComponents(string: url), let host = components.host, let user = components.user
        else { return nil }
        let database = components.path.hasPrefix("/") ? String(components.path.dropFirst()) : components.path
        return PostgresClient.Configuration(
            host: host, port: components.port ?? 5432, username: user, password: components.password,
            database: database.isEmpty ? nil : database, tls: .disable)
    }
}
#endif
