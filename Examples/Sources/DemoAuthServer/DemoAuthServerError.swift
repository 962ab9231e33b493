/// The errors of the demo auth server: a struct with a private code and static members.
public struct DemoAuthServerError: Error, Sendable, Equatable, CustomStringConvertible {
    private enum Code: String, Sendable {
        case alreadyRunning
        case startFailed
    }

    private let code: Code

    /// What went wrong underneath (for example the bind error), when there is such a cause.
    public let underlying: (any Error)?

    private init(_ code: Code, underlying: (any Error)? = nil) {
        self.code = code
        self.underlying = underlying
    }

    /// `start` or `run` was called while the server was already running.
    public static let alreadyRunning = DemoAuthServerError(.alreadyRunning)

    /// The server could not start (typically the port is taken).
    public static let startFailed = DemoAuthServerError(.startFailed)

    /// The server could not start, with the cause.
    ///
    /// - Parameter cause: The underlying error.
    /// - Returns: A ``startFailed`` error carrying the cause.
    static func startFailed(_ cause: (any Error)?) -> DemoAuthServerError {
        DemoAuthServerError(.startFailed, underlying: cause)
    }

    /// A readable form such as `DemoAuthServerError.startFailed`, with the cause when there is one.
    public var description: String {
        if let underlying { return "DemoAuthServerError.\(code.rawValue) (\(underlying))" }
        return "DemoAuthServerError.\(code.rawValue)"
    }

    /// Whether two errors have the same code (the cause is not compared).
    ///
    /// - Parameters:
    ///   - lhs: An error.
    ///   - rhs: Another error.
    /// - Returns: `true` when both have the same code.
    public static func == (lhs: DemoAuthServerError, rhs: DemoAuthServerError) -> Bool { lhs.code == rhs.code }
}
