# The Ruby side of sluice's embedded Ruby: what the ruby filter's code sees besides
# LogStash::Event and LogStash::Timestamp (defined in Rust).

# Libraries Logstash has loaded before any filter code runs.
require "json"
require "time"
require "date"
require "securerandom"

class LogStash::Timestamp
  include Comparable

  def time
    Time.at(__millis / 1000r).utc
  end

  def year
    time.year
  end

  def +(other)
    LogStash::Timestamp.at(to_f + other)
  end

  def -(other)
    other.is_a?(LogStash::Timestamp) ? to_f - other.to_f : LogStash::Timestamp.at(to_f - other)
  end

  def to_json(*_args)
    "\"#{self}\""
  end

  def inspect
    to_s
  end
end

class LogStash::Event
  def inspect
    "#<LogStash::Event #{to_hash_with_metadata.inspect}>"
  end
end

module Sluice
  # Logstash's plugin logger: message and optional data, into sluice's log.
  class Logger
    LEVELS = %w[trace debug info warn error fatal].freeze

    def initialize(label)
      @label = label
    end

    LEVELS.each_with_index do |level, n|
      define_method(level) do |message = nil, data = nil|
        text = message.to_s
        text = "#{text} #{data.inspect}" if data && !(data.respond_to?(:empty?) && data.empty?)
        Sluice.__log([n, 4].min, @label, text)
        nil
      end
      define_method("#{level}?") { Sluice.__log_enabled([n, 4].min) }
    end
  end

  # One ruby filter: `init` runs in it, `code` becomes its `filter_method`.
  class FilterContext
    def initialize(label)
      @logger = Logger.new(label)
    end

    # Runs the code on each event not cancelled; new events go to `made` after the index of
    # the event that made them. Returns, per event, nil or the exception raised.
    def __run(events, made)
      results = Array.new(events.size)
      events.each_with_index do |event, i|
        next if event.cancelled?
        begin
          filter_method(event) { |e| made << i << e }
        rescue Exception => e # rubocop:disable Lint/RescueException -- as Logstash's ruby filter
          results[i] = e
        end
      end
      results
    end
  end
end
