extension Result {
    /// The outcome of `body`, run in the caller's isolation: its value, or the error it threw.
    ///
    /// The client hands such outcomes to its ``SessionMachine``, which decides what each one means; the client itself
    /// holds no `catch` for an error it would only pass on.
    static func of(
        isolation: isolated (any Actor)? = #isolation, _ body: () async throws(Failure) -> Success
    ) async -> Result<Success, Failure> {
        do {
            return .success(try await body())
        } catch {
            return .failure(error)
        }
    }

    /// The error, or `nil` for a success.
    var failure: Failure? {
        guard case .failure(let error) = self else { return nil }
        return error
    }
}
