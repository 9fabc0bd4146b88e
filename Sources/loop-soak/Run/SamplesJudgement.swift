import Glibc

/// `loop-soak --judge FILE`: the memory part of a report, for the samples an earlier run wrote with `--samples`.
/// Lets a rule be applied to a run made before it existed, or a run made by another build, without running again.
enum SamplesJudgement {
    /// Reads the samples at `path` (`# … (warm-up N s)`, then `second resident-bytes heap-bytes` lines), prints the
    /// memory table, both slopes and the second half's judgement; answers whether both memory checks pass. Prints
    /// what is wrong and answers `false` for a file it cannot read.
    static func judge(path: String) -> Bool {
        guard let file = fopen(path, "r") else {
            StandardError.print("loop-soak: cannot read the samples file \(path)")
            return false
        }
        defer { fclose(file) }
        var warmup: Int?
        var samples: [MemorySampler.Sample] = []
        var line: UnsafeMutablePointer<CChar>?
        var capacity = 0
        defer { free(line) }
        while getline(&line, &capacity, file) >= 0, let line {
            let text = String(cString: line)
            if text.hasPrefix("#") {
                if let range = text.firstRange(of: "warm-up ") {
                    warmup = Int(text[range.upperBound...].prefix { $0.isNumber })
                }
                continue
            }
            let fields = text.split(whereSeparator: { $0 == " " || $0 == "\n" }).compactMap { Int($0) }
            guard fields.count == 3 else { continue }
            samples.append(MemorySampler.Sample(second: fields[0], resident: fields[1], heap: fields[2]))
        }
        guard let warmup, let seconds = samples.last?.second, seconds > warmup else {
            StandardError.print("loop-soak: \(path) has no warm-up header or no samples after the warm-up")
            return false
        }
        var memory = MemorySampler(warmupSeconds: warmup, seconds: seconds)
        for sample in samples { memory.append(sample) }
        let flatness = SecondHalfFlatness(samples: samples, seconds: seconds, warmupSeconds: warmup)

        print("loop-soak --judge \(path): \(samples.count) samples, \(seconds) s, warm-up \(warmup) s")
        MemoryTable.print(samples)
        print(
            "  slopes after the warm-up: malloc in use \(Format.mebibytesPerHour(memory.heapSlopePerHour)) (at most "
                + "\(Format.mebibytesPerHour(memory.heapLimitPerHour))), RSS "
                + "\(Format.mebibytesPerHour(memory.residentSlopePerHour)) (at most "
                + "\(Format.mebibytesPerHour(memory.residentLimitPerHour)))")
        if flatness.isJudged {
            print(
                "  second half: malloc in use slope \(Format.mebibytesPerHour(flatness.slopePerHour)) over the last "
                    + "\(flatness.spanSeconds) s, standard error \(Format.mebibytesPerHour(flatness.standardErrorPerHour)); "
                    + "flat if at most \(Format.mebibytesPerHour(flatness.limitPerHour)): "
                    + (flatness.isFlat ? "flat" : "CLIMBS"))
        } else {
            print(
                "  second half: not judged (\(flatness.blocks.count) blocks, "
                    + "\(SecondHalfFlatness.minimumBlocks) needed)")
        }
        return (memory.isWithinBudget || !memory.isLongEnough) && flatness.isFlat
    }
}
