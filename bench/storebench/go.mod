module sluice.bench/storebench

go 1.21

require github.com/rabbitmq/amqp091-go v1.10.0
