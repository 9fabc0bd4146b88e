/// Numbers as the report prints them, without Foundation.
enum Format {
    /// `value` with `decimals` digits after the point.
    static func decimal(_ value: Double, _ decimals: Int) -> String {
        var scale = 1
        for _ in 0..<decimals { scale *= 10 }
        let scaled = Int((abs(value) * Double(scale)).rounded())
        let sign = value < 0 && scaled > 0 ? "-" : ""
        guard decimals > 0 else { return "\(sign)\(scaled)" }
        let fraction = String(scaled % scale)
        return "\(sign)\(scaled / scale).\(String(repeating: "0", count: decimals - fraction.count))\(fraction)"
    }

    /// `duration` in seconds, one decimal.
    static func seconds(_ duration: Duration) -> String {
        decimal(Self.seconds(of: duration), 1)
    }

    /// `duration` in seconds.
    static func seconds(of duration: Duration) -> Double {
        Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
    }

    /// `value` with thousands separated by commas: `1,234,567`.
    static func count(_ value: Int) -> String {
        let digits = String(abs(value))
        var grouped = ""
        for (index, digit) in digits.enumerated() {
            if index > 0 && (digits.count - index) % 3 == 0 { grouped.append(",") }
            grouped.append(digit)
        }
        return value < 0 ? "-" + grouped : grouped
    }

    /// `bytes` in MiB, with `decimals` digits after the point (one unless told).
    static func mebibytes(_ bytes: Int, _ decimals: Int = 1) -> String {
        decimal(Double(bytes) / 1_048_576, decimals) + " MiB"
    }

    /// A change in bytes, in KiB with its sign and grouped digits: `+12 KiB`, `-3 KiB`.
    static func kibibytes(_ bytes: Int) -> String {
        (bytes >= 0 ? "+" : "-") + count(abs(bytes) / 1024) + " KiB"
    }

    /// A growth rate in bytes per hour, as MiB per hour with two decimals and its sign: `+0.25 MiB/h`.
    static func mebibytesPerHour(_ bytesPerHour: Double) -> String {
        (bytesPerHour >= 0 ? "+" : "") + decimal(bytesPerHour / 1_048_576, 2) + " MiB/h"
    }

    /// `text` padded with spaces on the left to `width`.
    static func right(_ text: String, _ width: Int) -> String {
        String(repeating: " ", count: max(0, width - text.count)) + text
    }

    /// `text` padded with spaces on the right to `width`.
    static func left(_ text: String, _ width: Int) -> String {
        text + String(repeating: " ", count: max(0, width - text.count))
    }
}
