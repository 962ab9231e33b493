extension TokenRefreshClient {
    /// Sends the revocations that earlier sign-outs could not send (the network was down, the provider did not
    /// answer), and waits for them: call it when the app sees the network come back. The client also sends them at
    /// launch and after ``networkRestored()``. Each revocation is sent at most
    /// ``PendingSignOuts/maximumSends`` times in all, then dropped. Processes sharing the queue
    /// (``PendingSignOuts/store``) send each revocation once: one that another process is sending at this moment is
    /// left to it.
    ///
    /// - Returns: How many revocations are still pending afterwards, not counting those another process is sending
    ///   at this moment.
    @discardableResult
    public nonisolated func sendPendingSignOuts() async -> Int {
        await signOuts.send()
    }
}
