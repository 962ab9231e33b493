// A stub of the documented API of os.OSAllocatedUnfairLock (macOS 13, iOS 16, tvOS 16, watchOS 9), for type-checking
// the Apple branch of LockedValue on Linux only. Signatures as Apple documents them; no behaviour.
public struct OSAllocatedUnfairLock<State>: @unchecked Sendable {
    public init(uncheckedState initialState: State) {}
    public func lock() {}
    public func unlock() {}
}
extension OSAllocatedUnfairLock where State == () {
    public init() {}
}
