import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// Timing helpers shared by the benchmark executables. Every figure is a median over samples, and every
/// verdict is a ratio against a baseline measured in the same run, so machine speed cancels out.
public enum Harness {
    /// Nanoseconds per operation: the median over `samples` batches of `iterations` calls of `body`.
    public static func nanosecondsPerOperation(
        samples: Int = 21, iterations: Int, _ body: () throws -> Void
    ) rethrows -> Double {
        for _ in 0..<max(1, iterations / 10) { try body() }  // warm up
        var results: [Double] = []
        for _ in 0..<samples {
            let start = DispatchTime.now().uptimeNanoseconds
            for _ in 0..<iterations { try body() }
            let end = DispatchTime.now().uptimeNanoseconds
            results.append(Double(end - start) / Double(iterations))
        }
        return median(results)
    }

    /// The async form of ``nanosecondsPerOperation(samples:iterations:_:)``.
    public static func nanosecondsPerOperation(
        samples: Int = 21, iterations: Int, _ body: () async throws -> Void
    ) async rethrows -> Double {
        for _ in 0..<max(1, iterations / 10) { try await body() }
        var results: [Double] = []
        for _ in 0..<samples {
            let start = DispatchTime.now().uptimeNanoseconds
            for _ in 0..<iterations { try await body() }
            let end = DispatchTime.now().uptimeNanoseconds
            results.append(Double(end - start) / Double(iterations))
        }
        return median(results)
    }

    /// Nanoseconds for one run of `body`: the median over `samples` runs.
    public static func nanosecondsPerRun(samples: Int = 11, _ body: () async throws -> Void) async rethrows -> Double {
        var results: [Double] = []
        for _ in 0..<samples {
            let start = DispatchTime.now().uptimeNanoseconds
            try await body()
            results.append(Double(DispatchTime.now().uptimeNanoseconds - start))
        }
        return median(results)
    }

    /// The median of `values`.
    public static func median(_ values: [Double]) -> Double {
        let sorted = values.sorted()
        return sorted.isEmpty ? .nan : sorted[sorted.count / 2]
    }

    /// Prints one result line, with the machine's load average at that moment, and returns whether `passed`; the
    /// executables exit non-zero on a miss. A verdict counts only from a run at a load below 1: under load the
    /// baselines slow down too, and every ratio shrinks toward 1.
    @discardableResult
    public static func report(_ name: String, _ figures: String, target: String, passed: Bool) -> Bool {
        print("\(passed ? "PASS" : "MISS")  \(name): \(figures)  [target: \(target)]  (\(loadAverage))")
        return passed
    }

    /// The load average over the last 1, 5 and 15 minutes, as `load 0.42 0.51 0.60` (`load unknown` where the
    /// system cannot tell).
    public static var loadAverage: String {
        var loads = [Double](repeating: 0, count: 3)
        guard getloadavg(&loads, 3) == 3 else { return "load unknown" }
        return "load " + loads.map { String(format: "%.2f", $0) }.joined(separator: " ")
    }

    /// Formats nanoseconds for people.
    public static func format(_ nanoseconds: Double) -> String {
        nanoseconds >= 1_000_000
            ? String(format: "%.2f ms", nanoseconds / 1_000_000)
            : nanoseconds >= 1_000
                ? String(format: "%.2f us", nanoseconds / 1_000)
                : String(format: "%.1f ns", nanoseconds)
    }
}
