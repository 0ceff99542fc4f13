import Foundation

/// A name for this process among the instances of a service (a worker's claim, a notifier's
/// place in the sequencer group): host, pid and a random number, unique across restarts and
/// hosts.
public enum InstanceName {
    public static func unique() -> String {
        "\(ProcessInfo.processInfo.hostName)-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
    }
}
